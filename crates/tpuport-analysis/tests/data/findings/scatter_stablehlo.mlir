module @jit_scat attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1024x16xf32>, %arg1: tensor<8xi32>, %arg2: tensor<8x16xf32>) -> (tensor<1024x16xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %c_0 = stablehlo.constant dense<1024> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<8xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<8xi1>, tensor<8xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<8xi32>) -> tensor<8x1xi32>
    %6 = "stablehlo.scatter"(%arg0, %5, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %28 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %28 : tensor<f32>
    }) : (tensor<1024x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<1024x16xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %8 = stablehlo.compare LT, %arg1, %7, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %c_2 = stablehlo.constant dense<1024> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %10 = stablehlo.add %arg1, %9 : tensor<8xi32>
    %11 = stablehlo.select %8, %10, %arg1 : tensor<8xi1>, tensor<8xi32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0] : (tensor<8xi32>) -> tensor<8x1xi32>
    %13 = "stablehlo.scatter"(%6, %12, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %28 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %28 : tensor<f32>
    }) : (tensor<1024x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<1024x16xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %14 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %15 = stablehlo.compare LT, %arg1, %14, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %c_4 = stablehlo.constant dense<1024> : tensor<i32>
    %16 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %17 = stablehlo.add %arg1, %16 : tensor<8xi32>
    %18 = stablehlo.select %15, %17, %arg1 : tensor<8xi1>, tensor<8xi32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [0] : (tensor<8xi32>) -> tensor<8x1xi32>
    %20 = "stablehlo.scatter"(%13, %19, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %28 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %28 : tensor<f32>
    }) : (tensor<1024x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<1024x16xf32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %21 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %22 = stablehlo.compare LT, %arg1, %21, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %c_6 = stablehlo.constant dense<1024> : tensor<i32>
    %23 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %24 = stablehlo.add %arg1, %23 : tensor<8xi32>
    %25 = stablehlo.select %22, %24, %arg1 : tensor<8xi1>, tensor<8xi32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0] : (tensor<8xi32>) -> tensor<8x1xi32>
    %27 = "stablehlo.scatter"(%20, %26, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %28 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %28 : tensor<f32>
    }) : (tensor<1024x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<1024x16xf32>
    return %27 : tensor<1024x16xf32>
  }
}
