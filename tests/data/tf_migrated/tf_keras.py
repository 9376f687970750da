"""A small TF 2.x Keras model trained with model.fit and a loss-scaling optimizer."""

import numpy as np
import tensorflow as tf
import npu_device
npu_device.open().as_default()


def make_model():
    return tf.keras.Sequential(
        [
            tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
            tf.keras.layers.Dense(1),
        ]
    )


def main():
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
    tf.keras.utils.set_random_seed(0)
    rng = np.random.RandomState(0)
    x = rng.normal(size=(128, 8)).astype(np.float32)
    y = np.sum(x, axis=1, keepdims=True).astype(np.float32)
    model = make_model()
    optimizer = npu_device.train.optimizer.NpuLossScaleOptimizer(tf.keras.optimizers.SGD(0.01))
    model.compile(optimizer=optimizer, loss="mse")
    history = model.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0)
    print(f"final loss {history.history['loss'][-1]:.9g}")


if __name__ == "__main__":
    main()
