// Three kernels of known work, launched in a loop like a decode step: an fp32 FMA loop (compute on
// the FMA pipe), a copy (HBM-bound) and a bf16 tensor-core GEMM tile loop (mma.sync via wmma).
// `toy ITERS` runs ITERS steps (0: until killed, as a server does) and prints nothing.
//   nvcc -O3 -arch=sm_90 -o /tmp/toy bench/workloads/toy.cu
#include <cuda_bf16.h>
#include <mma.h>
#include <cstdio>
#include <cstdlib>
using namespace nvcuda;

__global__ void fma_loop(float *out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.5f;
  for (int i = 0; i < iters; ++i) { a = fmaf(a, b, c); c = fmaf(c, b, a); }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + c;
}

__global__ void copy(const float4 *in, float4 *out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = in[i];
}

// each warp multiplies its own 16x16 bf16 tiles `reps` times (tensor work without memory traffic)
__global__ void mma_tiles(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *c, int reps) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  for (int i = 0; i < reps; ++i) wmma::mma_sync(acc, fa, fb, acc);
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  wmma::store_matrix_sync(c + warp * 256, acc, 16, wmma::mem_row_major);
}

int main(int argc, char **argv) {
  long steps = argc > 1 ? atol(argv[1]) : 10;
  const size_t n = 64u << 20;  // 64 Mi float4: 1 GiB each way
  float4 *in, *out; float *f, *c; __nv_bfloat16 *a, *b;
  cudaMalloc(&in, n * sizeof(float4)); cudaMalloc(&out, n * sizeof(float4));
  cudaMemset(in, 0, n * sizeof(float4));
  cudaMalloc(&f, 1024 * 256 * sizeof(float));
  cudaMalloc(&c, 1024 * 8 * 256 * sizeof(float));
  cudaMalloc(&a, 256 * sizeof(__nv_bfloat16)); cudaMalloc(&b, 256 * sizeof(__nv_bfloat16));
  cudaMemset(a, 0, 512); cudaMemset(b, 0, 512);
  for (long s = 0; steps == 0 || s < steps; ++s) {
    fma_loop<<<1024, 256>>>(f, 4096);
    copy<<<1056, 512>>>(in, out, n / 4);  // a quarter of the buffers: 256 MiB read, 256 MiB written
    mma_tiles<<<1024, 256>>>(a, b, c, 2048);
    cudaDeviceSynchronize();
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) { fprintf(stderr, "toy: %s\n", cudaGetErrorString(e)); return 1; }
  return 0;
}
