module @jit_clean attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<128x256xbf16>, %arg1: tensor<256x256xbf16>, %arg2: tensor<256x256xbf16>) -> (tensor<128x256xbf16> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<128x256xbf16>, tensor<256x256xbf16>) -> tensor<128x256xbf16>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<bf16>) -> tensor<128x256xbf16>
    %2 = stablehlo.maximum %0, %1 : tensor<128x256xbf16>
    %3 = stablehlo.dot_general %2, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<128x256xbf16>, tensor<256x256xbf16>) -> tensor<128x256xbf16>
    return %3 : tensor<128x256xbf16>
  }
}
