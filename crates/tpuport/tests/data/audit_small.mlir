// Hand-written StableHLO for the `tpuport audit` snapshot and CLI tests: a conv with SAME
// padding, a call, a counted while loop, a matmul whose output width (10) pads badly.
module @jit_small attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3x4x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<512x10xf32>, %arg3: tensor<8x8x8x4xf32>) -> (tensor<8x10xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convolution(%arg3, %arg0) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<8x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<8x8x8x8xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [3] : (tensor<8xf32>) -> tensor<8x8x8x8xf32>
    %2 = stablehlo.add %0, %1 : tensor<8x8x8x8xf32>
    %3 = call @relu(%2) : (tensor<8x8x8x8xf32>) -> tensor<8x8x8x8xf32>
    %4 = stablehlo.reshape %3 : (tensor<8x8x8x8xf32>) -> tensor<8x512xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %4) : tensor<i32>, tensor<8x512xf32>
    cond {
      %c_1 = stablehlo.constant dense<4> : tensor<i32>
      %7 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    } do {
      %c_1 = stablehlo.constant dense<1> : tensor<i32>
      %7 = stablehlo.add %iterArg, %c_1 : tensor<i32>
      %8 = stablehlo.tanh %iterArg_0 : tensor<8x512xf32>
      stablehlo.return %7, %8 : tensor<i32>, tensor<8x512xf32>
    }
    %6 = stablehlo.dot_general %5#1, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x512xf32>, tensor<512x10xf32>) -> tensor<8x10xf32>
    return %6 : tensor<8x10xf32>
  }
  func.func private @relu(%arg0: tensor<8x8x8x8xf32>) -> tensor<8x8x8x8xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x8x8x8xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<8x8x8x8xf32>
    return %1 : tensor<8x8x8x8xf32>
  }
}
