import time, numpy as np, jax, jax.numpy as jnp
from jax import lax
rng=np.random.default_rng(0)
cases=[(8,96,56,56,24),(8,144,56,56,24),(8,32,112,112,16),(8,384,14,14,64),(8,960,7,7,160),(8,256,56,56,64),(8,1024,14,14,256)]
def conv(x,w): return lax.conv_general_dilated(x,w,(1,1),'VALID',dimension_numbers=('NCHW','OIHW','NCHW'))
def ein(x,w): return jnp.einsum('nihw,oi->nohw',x,w[:,:,0,0])
fc=jax.jit(conv); fe=jax.jit(ein)
for (n,i,h,w_,o) in cases:
    x=jnp.asarray(rng.standard_normal((n,i,h,w_),dtype=np.float32)); w=jnp.asarray(rng.standard_normal((o,i,1,1),dtype=np.float32))
    a=np.asarray(fc(x,w)); b=np.asarray(fe(x,w)); 
    t={'conv':[], 'ein':[]}
    for r in range(7):
        for k,f in (('conv',fc),('ein',fe)):
            s=time.perf_counter(); f(x,w).block_until_ready(); t[k].append(time.perf_counter()-s)
    mc=sorted(t['conv'])[3]; me=sorted(t['ein'])[3]
    print(f"{(n,i,h,w_,o)} conv {mc*1e3:.2f} ms einsum {me*1e3:.2f} ms ratio {mc/me:.2f} maxdiff {np.abs(a-b).max():.1e}")
