"""A small TF 1.x-style Estimator: linear regression on fixed data, a few steps."""

import argparse
import tempfile

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

BATCH = 32
FEATURES = 8


def make_data():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(128, FEATURES)).astype(np.float32)
    w = rng.normal(size=(FEATURES, 1)).astype(np.float32)
    y = x @ w + 0.1 * rng.normal(size=(128, 1)).astype(np.float32)
    return x, y


def train_input_fn():
    x, y = make_data()
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    return ds.repeat().batch(BATCH, drop_remainder=True)


def eval_input_fn():
    x, y = make_data()
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    return ds.batch(BATCH, drop_remainder=True)


def model_fn(features, labels, mode, params):
    init = tf.compat.v1.glorot_uniform_initializer(seed=1)
    w = tf.compat.v1.get_variable("w", [FEATURES, 1], initializer=init)
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
    pred = tf.matmul(features, w) + b
    loss = tf.reduce_mean(tf.square(pred - labels))
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["lr"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--model-dir", default=None)
    args = parser.parse_args()
    model_dir = args.model_dir or tempfile.mkdtemp(prefix="tf_estimator_")
    config = NPURunConfig(
        model_dir=model_dir,
        save_checkpoints_steps=10,
        tf_random_seed=0,
        session_config=npu_config_proto(config_proto=tf.compat.v1.ConfigProto(allow_soft_placement=True)),
    )
    estimator = NPUEstimator(model_fn=model_fn, config=config, params={"lr": 0.05})
    estimator.train(input_fn=train_input_fn, steps=args.steps)
    metrics = estimator.evaluate(input_fn=eval_input_fn)
    print(f"final loss {metrics['loss']:.9g}")


if __name__ == "__main__":
    main()
