module @jit_attn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<128x64xbf16>, %arg1: tensor<128x64xbf16>) -> (tensor<128x128xbf16> {jax.result_info = "result"}) {
    %0 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<128x64xbf16>) -> tensor<64x128xbf16>
    %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<128x128xbf16>
    %cst = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<128x128xbf16>, tensor<bf16>) -> tensor<128xbf16>
    %cst_0 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<bf16>) -> tensor<128xbf16>
    %4 = stablehlo.maximum %3, %2 : tensor<128xbf16>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<128xbf16>) -> tensor<128x1xbf16>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<128x1xbf16>) -> tensor<128x128xbf16>
    %7 = stablehlo.subtract %1, %6 : tensor<128x128xbf16>
    %8 = stablehlo.exponential %7 : tensor<128x128xbf16>
    %9 = stablehlo.convert %8 : (tensor<128x128xbf16>) -> tensor<128x128xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%9 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<128x128xf32>, tensor<f32>) -> tensor<128xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0] : (tensor<128xf32>) -> tensor<128x1xf32>
    %12 = stablehlo.convert %11 : (tensor<128x1xf32>) -> tensor<128x1xbf16>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<128x1xbf16>) -> tensor<128x128xbf16>
    %14 = stablehlo.divide %8, %13 : tensor<128x128xbf16>
    %15 = stablehlo.convert %14 : (tensor<128x128xbf16>) -> tensor<128x128xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.reduce(%15 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<128x128xf32>, tensor<f32>) -> tensor<128xf32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [0] : (tensor<128xf32>) -> tensor<128x1xf32>
    %cst_3 = stablehlo.constant dense<1.280000e+02> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<128x1xf32>
    %19 = stablehlo.divide %17, %18 : tensor<128x1xf32>
    %20 = stablehlo.convert %19 : (tensor<128x1xf32>) -> tensor<128x1xbf16>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1] : (tensor<128x1xbf16>) -> tensor<128x128xbf16>
    %22 = stablehlo.subtract %14, %21 : tensor<128x128xbf16>
    %23 = stablehlo.multiply %22, %22 : tensor<128x128xbf16>
    %24 = stablehlo.convert %23 : (tensor<128x128xbf16>) -> tensor<128x128xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %25 = stablehlo.reduce(%24 init: %cst_4) applies stablehlo.add across dimensions = [1] : (tensor<128x128xf32>, tensor<f32>) -> tensor<128xf32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0] : (tensor<128xf32>) -> tensor<128x1xf32>
    %cst_5 = stablehlo.constant dense<1.280000e+02> : tensor<f32>
    %27 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<128x1xf32>
    %28 = stablehlo.divide %26, %27 : tensor<128x1xf32>
    %29 = stablehlo.convert %28 : (tensor<128x1xf32>) -> tensor<128x1xbf16>
    %30 = stablehlo.broadcast_in_dim %20, dims = [0, 1] : (tensor<128x1xbf16>) -> tensor<128x128xbf16>
    %31 = stablehlo.subtract %14, %30 : tensor<128x128xbf16>
    %cst_6 = stablehlo.constant dense<1.001360e-05> : tensor<bf16>
    %32 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<bf16>) -> tensor<128x1xbf16>
    %33 = stablehlo.add %29, %32 : tensor<128x1xbf16>
    %34 = stablehlo.rsqrt %33 : tensor<128x1xbf16>
    %35 = stablehlo.broadcast_in_dim %34, dims = [0, 1] : (tensor<128x1xbf16>) -> tensor<128x128xbf16>
    %36 = stablehlo.multiply %31, %35 : tensor<128x128xbf16>
    return %36 : tensor<128x128xbf16>
  }
}
