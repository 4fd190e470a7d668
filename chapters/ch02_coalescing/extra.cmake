# The BF16 transpose reference uses cublasLtMatrixTransform (cuBLAS has no BF16 geam).
target_link_libraries(${id}_reference PUBLIC CUDA::cublasLt)
