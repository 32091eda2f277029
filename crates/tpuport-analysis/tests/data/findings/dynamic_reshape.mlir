module @dyn {
  func.func public @main(%arg0: tensor<16xf32>, %arg1: tensor<2xi64>) -> tensor<?x?xf32> {
    %0 = stablehlo.abs %arg1 : tensor<2xi64>
    %1 = stablehlo.dynamic_reshape %arg0, %0 : (tensor<16xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    return %1 : tensor<?x?xf32>
  }
}
