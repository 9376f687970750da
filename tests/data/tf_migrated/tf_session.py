"""A small tf.compat.v1 graph-mode loop: placeholders, dropout, a Session, plain SGD."""

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(0)

STEPS = 30


def build():
    x = tf.compat.v1.placeholder(tf.float32, [None, 16], name="x")
    y = tf.compat.v1.placeholder(tf.float32, [None, 1], name="y")
    init = tf.compat.v1.glorot_uniform_initializer(seed=2)
    w1 = tf.compat.v1.get_variable("w1", [16, 32], initializer=init)
    w2 = tf.compat.v1.get_variable("w2", [32, 1], initializer=init)
    hidden = tf.nn.relu(tf.matmul(x, w1))
    hidden = npu_ops.dropout(hidden, keep_prob=0.8, seed=3)
    loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) - y))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)
    return x, y, loss, train_op


def main():
    rng = np.random.RandomState(0)
    data_x = rng.normal(size=(64, 16)).astype(np.float32)
    data_y = np.sum(data_x[:, :4], axis=1, keepdims=True).astype(np.float32)
    x, y, loss, train_op = build()
    config = npu_config_proto(config_proto=tf.compat.v1.ConfigProto())
    config.gpu_options.allow_growth = True
    with tf.compat.v1.Session(config=config) as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(STEPS):
            value, _ = sess.run([loss, train_op], feed_dict={x: data_x, y: data_y})
    print(f"final loss {value:.9g}")


if __name__ == "__main__":
    main()
