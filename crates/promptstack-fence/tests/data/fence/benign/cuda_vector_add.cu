#include <cstdio>
#include <cuda_runtime.h>

__global__ void vector_add(const float *a, const float *b, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

int main() {
    const int n = 1 << 20;
    float *a, *b, *out;
    cudaMallocManaged(&a, n * sizeof(float));
    cudaMallocManaged(&b, n * sizeof(float));
    cudaMallocManaged(&out, n * sizeof(float));
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    vector_add<<<blocks, threads>>>(a, b, out, n);
    vector_add<<<dim3(blocks, 1, 1), dim3(threads), 0, stream>>>(a, b, out, n);
    cudaDeviceSynchronize();
    printf("out[0] = %f\n", out[0]);
    return 0;
}
