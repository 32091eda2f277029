"""XLA:CPU: a 3x3 depthwise convolution as a grouped convolution vs as nine shifted multiply-adds
(the reason for tpuport_lower::rewrite::depthwise). Prints both medians and the ratio."""
import time, jax, jax.numpy as jnp, numpy as np
from jax import lax
N,C,H,W=8,96,112,112
x=jnp.asarray(np.random.rand(N,C,H,W).astype(np.float32))
k=jnp.asarray(np.random.rand(C,1,3,3).astype(np.float32))
@jax.jit
def conv(x,k):
    return lax.conv_general_dilated(x,k,(1,1),((1,1),(1,1)),dimension_numbers=('NCHW','OIHW','NCHW'),feature_group_count=C)
@jax.jit
def shifted(x,k):
    xp=jnp.pad(x,((0,0),(0,0),(1,1),(1,1)))
    acc=None
    for i in range(3):
        for j in range(3):
            t=xp[:,:,i:i+H,j:j+W]*k[:,0,i,j][None,:,None,None]
            acc=t if acc is None else acc+t
    return acc
def tm(f):
    f(x,k).block_until_ready()
    ts=[]
    for _ in range(10):
        t=time.perf_counter(); f(x,k).block_until_ready(); ts.append(time.perf_counter()-t)
    return np.median(ts)
print("max diff", float(jnp.max(jnp.abs(conv(x,k)-shifted(x,k)))))
a=tm(conv); b=tm(shifted)
print(f"grouped conv {a*1e3:.2f} ms, shifted {b*1e3:.2f} ms, ratio {a/b:.1f}x")
