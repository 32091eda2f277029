"""Train a small CNN on CIFAR-10 with MirroredStrategy and mixed_float16 (a GPU script)."""

import tensorflow as tf
from tensorflow import keras

keras.mixed_precision.set_global_policy("mixed_float16")

BATCH_SIZE = 256
EPOCHS = 10


def make_dataset(x, y, training):
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if training:
        ds = ds.shuffle(10_000)
    ds = ds.map(lambda a, b: (tf.cast(a, tf.float32) / 255.0, b), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH_SIZE)


def build_model():
    inputs = keras.Input(shape=(32, 32, 3))
    x = keras.layers.Conv2D(64, 3, activation="relu")(inputs)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(128, 3, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(10, dtype="float32")(x)
    return keras.Model(inputs, outputs)


(x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
train_ds = make_dataset(x_train, y_train, training=True)
test_ds = make_dataset(x_test, y_test, training=False)

strategy = tf.distribute.MirroredStrategy()
print("replicas:", strategy.num_replicas_in_sync)

model = build_model()
optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam(1e-3))
model.compile(
    optimizer=optimizer,
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
model.fit(train_ds, validation_data=test_ds, epochs=EPOCHS)
model.save("cifar_cnn.keras")
