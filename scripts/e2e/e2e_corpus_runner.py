#!/usr/bin/env python3
"""Run one corpus training script (original or ported) on tiny synthetic data, on CPU.

    python e2e_corpus_runner.py SCRIPT [ARGS...]

Used by `scripts/e2e/e2e_port.py` with the project venv (original scripts, and Keras scripts
ported to tf-tpu, on TensorFlow's CPU) and with `.venv-xla` (scripts ported to torch_xla,
`PJRT_DEVICE=CPU`). The same patches are applied to both runs,
so their loss trajectories can be compared:

* datasets: `torchvision.datasets.MNIST` / `FashionMNIST` become small synthetic sets (28x28
  uint8 images whose label is the brightest quadrant, so it can be learned), `FakeData` is
  capped at 32 images, and the JAX examples' `datasets.mnist()` returns synthetic arrays;
* randomness that torch_xla draws on the device with its own generator (`torch.randn`,
  `torch.rand`, `*_like`, `torch.nn.init` on device tensors) is drawn on the host from torch's
  CPU generator and moved to the tensor's device, dropout is the identity, and torch's CPU
  generator is seeded with 0 first: both runs then see the same numbers;
* Keras scripts: `keras.datasets.mnist.load_data()` returns the same synthetic images, and
  Keras's seeds (Python, NumPy, TensorFlow) are fixed with deterministic TensorFlow ops;
* the Flax MNIST example (a module without `__main__`): `tensorflow_datasets`, `ml_collections`
  `orbax.export` and the TensorBoard writer are small stand-ins (synthetic MNIST, a dict
  config, an export and a summary writer that do nothing), `absl.logging.info` prints to stdout, and `train_and_evaluate(config, workdir)` is
  called the way the example's main.py calls it (2 epochs);
* `matplotlib` (imported, unused, by the PyTorch tutorial) is a stub when it is not installed.

Nothing here changes what the script computes on its own data path; the script runs with
`runpy` as `__main__` in the current directory.
"""

import runpy
import sys
import types

import numpy as np

N_TRAIN = 128
N_TEST = 64


def synthetic_images(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.randint(0, 64, size=(n, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 4, size=n)
    for i, q in enumerate(labels):
        r, c = divmod(int(q), 2)
        x[i, r * 14:(r + 1) * 14, c * 14:(c + 1) * 14] += 24
    return x, labels.astype(np.int64)


def patch_torch():
    try:
        import torch
    except ImportError:
        return
    import torch.nn.functional as F

    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout"):
        if hasattr(F, name):
            setattr(F, name, lambda input, *a, **k: input)

    def host(fn):
        def draw(*args, device=None, **kwargs):
            out = fn(*args, **kwargs)
            return out.to(device) if device is not None else out
        return draw

    def host_like(fn):
        def draw(t, *args, **kwargs):
            kwargs.pop("device", None)
            return fn(t.shape, *args, dtype=kwargs.pop("dtype", t.dtype), **kwargs).to(t.device)
        return draw

    randn, rand = torch.randn, torch.rand
    torch.randn, torch.rand = host(randn), host(rand)
    torch.randn_like, torch.rand_like = host_like(randn), host_like(rand)

    # Weight initialisers run on the device when a script initialises after `.to(device)`.
    def host_init(fn):
        def init(tensor, *args, **kwargs):
            if tensor.device.type == "cpu":
                return fn(tensor, *args, **kwargs)
            cpu = torch.empty(tensor.shape, dtype=tensor.dtype)
            fn(cpu, *args, **kwargs)
            with torch.no_grad():
                tensor.copy_(cpu.to(tensor.device))
            return tensor
        return init

    for name in ("normal_", "uniform_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
                 "xavier_uniform_", "xavier_normal_"):
        if hasattr(torch.nn.init, name):
            setattr(torch.nn.init, name, host_init(getattr(torch.nn.init, name)))
    # Scripts that never seed (the tutorial) start from the same weights in both runs.
    torch.manual_seed(0)

    try:
        import torchvision.datasets as tvd
    except ImportError:
        return

    class Synthetic(torch.utils.data.Dataset):
        def __init__(self, root=None, train=True, download=False, transform=None,
                     target_transform=None, **_):
            self.x, self.y = synthetic_images(N_TRAIN if train else N_TEST, 0 if train else 1)
            self.transform, self.target_transform = transform, target_transform
            self.train = train

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            from PIL import Image
            img = Image.fromarray(self.x[i], mode="L")
            y = int(self.y[i])
            if self.transform is not None:
                img = self.transform(img)
            if self.target_transform is not None:
                y = self.target_transform(y)
            return img, y

    tvd.MNIST = Synthetic
    tvd.FashionMNIST = Synthetic
    fake = tvd.FakeData

    class SmallFake(fake):
        def __init__(self, size=32, *args, **kwargs):
            super().__init__(min(size, 32), *args, **kwargs)

    tvd.FakeData = SmallFake


def patch_keras():
    """Keras scripts: `keras.datasets.mnist.load_data()` returns the synthetic images, and
    every seed Keras/TensorFlow/NumPy use is fixed with deterministic TF ops, so the original
    and the ported run draw the same weights, shuffles and dropout masks."""
    import tensorflow as tf
    import keras

    def load_data(path="mnist.npz"):
        (xtr, ytr), (xte, yte) = (synthetic_images(N_TRAIN * 4, 0),
                                  synthetic_images(N_TEST * 4, 1))
        return (xtr, ytr), (xte, yte)

    for mod in (keras.datasets.mnist, tf.keras.datasets.mnist):
        mod.load_data = load_data
    keras.utils.set_random_seed(0)
    tf.config.experimental.enable_op_determinism()


class ConfigDict(dict):
    """Stand-in for `ml_collections.ConfigDict` (attribute access on a dict)."""

    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


def patch_flax_mnist():
    """The Flax MNIST example: `tensorflow_datasets.load("mnist")` gives the synthetic images
    as a `tf.data` dataset, `ml_collections` is the small stand-in above, the final
    `orbax.export` of the trained model does nothing (it is not part of training), and
    `absl.logging.info` prints its (already formatted) line to stdout, and the TensorBoard
    summary writer (which needs the tensorboard package) writes nothing."""
    import tensorflow as tf
    from absl import logging as absl_logging

    tfds = types.ModuleType("tensorflow_datasets")

    def load(name, split):
        assert name == "mnist", name
        x, y = synthetic_images(N_TRAIN * 2, 0) if split == "train" else synthetic_images(
            N_TEST * 2, 1)
        return tf.data.Dataset.from_tensor_slices({"image": x[..., None], "label": y})

    tfds.load = load
    sys.modules["tensorflow_datasets"] = tfds
    mlc = types.ModuleType("ml_collections")
    mlc.ConfigDict = ConfigDict
    sys.modules["ml_collections"] = mlc
    export = types.ModuleType("orbax.export")

    class Stub:
        def __init__(self, *a, **k):
            pass

        def __getattr__(self, name):
            return lambda *a, **k: None

    export.JaxModule = export.ExportManager = export.ServingConfig = Stub
    sys.modules["orbax.export"] = export
    board = types.ModuleType("flax.metrics.tensorboard")
    board.SummaryWriter = Stub
    sys.modules["flax.metrics.tensorboard"] = board
    absl_logging.info = lambda msg, *a: print(msg % a if a else msg, flush=True)


def run_flax_mnist(namespace, workdir):
    """`train_and_evaluate(config, workdir)`, as the example's main.py calls it, with the
    example's default hyperparameters and 2 epochs."""
    config = ConfigDict(learning_rate=0.1, momentum=0.9, batch_size=32, num_epochs=2)
    namespace["train_and_evaluate"](config, workdir)


def jax_datasets_module():
    mod = types.ModuleType("datasets")

    def mnist():
        out = []
        for n, seed in ((N_TRAIN * 4, 0), (N_TEST * 4, 1)):
            x, y = synthetic_images(n, seed)
            out.append((x.reshape(n, 784).astype(np.float32) / 255.0,
                        np.eye(10, dtype=np.float32)[y]))
        (xtr, ytr), (xte, yte) = out
        return xtr, ytr, xte, yte

    mod.mnist = mnist
    return mod


def main():
    path = sys.argv[1]
    sys.argv = [path] + sys.argv[2:]
    patch_torch()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        mpl = types.ModuleType("matplotlib")
        mpl.pyplot = types.ModuleType("matplotlib.pyplot")
        sys.modules["matplotlib"] = mpl
        sys.modules["matplotlib.pyplot"] = mpl.pyplot
    text = open(path).read()
    if "from tensorflow import keras" in text or "\nimport keras" in text:
        patch_keras()
    flax_mnist = "def train_and_evaluate(" in text and "tfds.load('mnist'" in text
    if flax_mnist:
        patch_flax_mnist()
    if "jax" in text and not flax_mnist:
        data = jax_datasets_module()
        sys.modules["datasets"] = data
        examples = types.ModuleType("examples")
        examples.datasets = data
        sys.modules["examples"] = examples
        sys.modules["examples.datasets"] = data
    namespace = runpy.run_path(path, run_name="__main__")
    if flax_mnist:
        run_flax_mnist(namespace, "flax_workdir")


if __name__ == "__main__":
    main()
