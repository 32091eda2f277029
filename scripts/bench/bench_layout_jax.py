"""A ResNet-50-shaped convolution stack (random weights, batch argv[1], default 8) jitted by JAX
in NCHW/OIHW and in NHWC/HWIO: same outputs, median of 5 interleaved runs each, and the
NHWC/NCHW speed ratio. Tells whether lowering convolutions in NHWC would help XLA:CPU.
Run: XLA_FLAGS=--xla_cpu_use_xnnpack=false .venv/bin/python scripts/bench/bench_layout_jax.py 8
"""
import time, sys, numpy as np, jax, jax.numpy as jnp
from jax import lax
rng = np.random.default_rng(0)
def conv(x, w, stride, layout):
    k = w.shape[0]
    pad = [(k//2, k//2)]*2
    if layout == 'nchw':
        wt = jnp.transpose(w, (3, 2, 0, 1))  # HWIO->OIHW (constant folded)
        return lax.conv_general_dilated(x, wt, (stride, stride), pad, dimension_numbers=('NCHW','OIHW','NCHW'))
    return lax.conv_general_dilated(x, w, (stride, stride), pad, dimension_numbers=('NHWC','HWIO','NHWC'))
def bias(x, b, layout):
    return x + (b[None,:,None,None] if layout=='nchw' else b[None,None,None,:])
# resnet-50 spec
def make_params():
    ps=[]; cin=3
    ps.append((rng.standard_normal((7,7,3,64),dtype=np.float32)*0.05, np.zeros(64,np.float32), 2))
    cin=64
    for (n, mid, out, s) in [(3,64,256,1),(4,128,512,2),(6,256,1024,2),(3,512,2048,2)]:
        for i in range(n):
            st = s if i==0 else 1
            blk=[(rng.standard_normal((1,1,cin,mid),dtype=np.float32)*0.05,np.zeros(mid,np.float32),1),
                 (rng.standard_normal((3,3,mid,mid),dtype=np.float32)*0.05,np.zeros(mid,np.float32),st),
                 (rng.standard_normal((1,1,mid,out),dtype=np.float32)*0.05,np.zeros(out,np.float32),1)]
            proj = (rng.standard_normal((1,1,cin,out),dtype=np.float32)*0.05,np.zeros(out,np.float32),st) if i==0 else None
            ps.append((blk,proj)); cin=out
    return ps
P = make_params()
def net(x, layout):
    w,b,s = P[0]
    x = jax.nn.relu(bias(conv(x, w, s, layout), b, layout))
    for blk, proj in P[1:]:
        h = x
        for j,(w,b,s) in enumerate(blk):
            h = bias(conv(h, w, s, layout), b, layout)
            if j<2: h = jax.nn.relu(h)
        sc = x if proj is None else bias(conv(x, proj[0], proj[2], layout), proj[1], layout)
        x = jax.nn.relu(h+sc)
    return jnp.mean(x, axis=(2,3) if layout=='nchw' else (1,2))
B=int(sys.argv[1]) if len(sys.argv)>1 else 8
xs = {'nchw': jnp.asarray(rng.standard_normal((B,3,224,224),dtype=np.float32)),
      'nhwc': None}
xs['nhwc'] = jnp.transpose(xs['nchw'], (0,2,3,1))
fs = {l: jax.jit(lambda x, l=l: net(x, l)) for l in xs}
outs = {l: np.asarray(fs[l](xs[l])) for l in xs}
print('max diff', np.abs(outs['nchw']-outs['nhwc']).max(), 'scale', np.abs(outs['nchw']).max())
times = {l: [] for l in xs}
for r in range(5):
    for l in xs:
        t=time.perf_counter(); fs[l](xs[l]).block_until_ready(); times[l].append(time.perf_counter()-t)
for l in xs: print(l, 'median s', sorted(times[l])[2], 'items/s', B/sorted(times[l])[2])
print('nhwc/nchw speed', sorted(times['nchw'])[2]/sorted(times['nhwc'])[2])
