// Writes a CUDA source file of at least N lines, deterministically (same
// seed, same text), that includes cuda_runtime.h: a numerical library of the
// kind a GPU project grows into. Device helpers, elementwise kernels, shared
// memory reductions and transposes, tiled matrix products, stencils,
// histograms and scans, each with a host wrapper; then a host pipeline with
// streams, events, pinned and pageable buffers, and main(). Most of it is
// correct code; here and there it has the habits advise reports (unchecked
// API calls, cudaMalloc in a loop, a sync after every launch, odd block
// sizes), at a natural rate. It compiles with `nvcc -arch=sm_90 -c`.
//
//   node gen_cuda_file.mjs [--lines N] [--seed S] > kernels.cu
//
// generateCudaFile() also returns `editPoints`: 0-based lines holding a
// statement inside a function body (ending in ';', alone on its line), with
// their indentation, where the benchmark types.
import { fileURLToPath } from 'node:url';

export function mulberry32(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

const HEADER = `// Numerical kernels and the host pipeline that drives them.
//
// Generated for advise's CUDA benchmark (bench/cuda/gen_cuda_file.mjs): a long
// translation unit of the kind GPU code bases grow into.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>

#define CHECK(call)                                                             \\
    do {                                                                        \\
        cudaError_t err_ = (call);                                              \\
        if (err_ != cudaSuccess) {                                              \\
            fprintf(stderr, "%s:%d: %s: %s\\n", __FILE__, __LINE__, #call,       \\
                    cudaGetErrorString(err_));                                  \\
            exit(1);                                                            \\
        }                                                                       \\
    } while (0)

#define TILE 32
#define BLOCK_ROWS 8

struct Particle {
    float x, y, z;
    float vx, vy, vz;
    float mass;
    int id;
};

struct Stats {
    float sum;
    float min;
    float max;
    int count;
};

__device__ __forceinline__ float clampf(float v, float lo, float hi) {
    return fminf(fmaxf(v, lo), hi);
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
    return v;
}

template <typename T>
__device__ T lerp(T a, T b, float t) {
    return a + (b - a) * t;
}
`;

// elementwise maps: [name, params, body expression(s) using i]
const MAPS = [
    ['scale', 'float *y, const float *x, float a', ['y[i] = a * x[i];']],
    ['axpy', 'float *y, const float *x, float a', ['y[i] = a * x[i] + y[i];']],
    ['relu', 'float *y, const float *x', ['y[i] = x[i] > 0.0f ? x[i] : 0.0f;']],
    ['gelu', 'float *y, const float *x', ['const float v = x[i];', 'y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));']],
    ['sigmoid', 'float *y, const float *x', ['y[i] = 1.0f / (1.0f + expf(-x[i]));']],
    ['clip', 'float *y, const float *x, float lo, float hi', ['y[i] = clampf(x[i], lo, hi);']],
    ['square', 'float *y, const float *x', ['const float v = x[i];', 'y[i] = v * v;']],
    ['add', 'float *y, const float *a, const float *b', ['y[i] = a[i] + b[i];']],
    ['mul', 'float *y, const float *a, const float *b', ['y[i] = a[i] * b[i];']],
    ['fma3', 'float *y, const float *a, const float *b, const float *c', ['y[i] = fmaf(a[i], b[i], c[i]);']],
    ['blend', 'float *y, const float *a, const float *b, float t', ['y[i] = lerp(a[i], b[i], t);']],
    ['softplus', 'float *y, const float *x', ['const float v = x[i];', 'y[i] = v > 20.0f ? v : log1pf(expf(v));']],
];

function argNames(params) {
    return params.split(',').map((p) => p.trim().split(/[\s*]+/).pop());
}

export function generateCudaFile(minLines = 1500, seed = 1234) {
    // the host part grows with the kernels: aim higher until the file is long enough
    for (let target = minLines; ; target += 50) {
        const r = generate(target, minLines, seed);
        if (r.lines >= minLines) return r;
    }
}

function generate(kernelTarget, minLines, seed) {
    const rnd = mulberry32(seed);
    const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
    const chance = (p) => rnd() < p;
    const lines = HEADER.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    const editPoints = [];
    // add a block of text; lines starting with "@" are statements the benchmark may edit after
    const add = (text) => {
        for (const raw of text.replace(/\n$/, '').split('\n')) {
            if (raw.startsWith('@')) {
                const line = raw.slice(1);
                editPoints.push({ line: lines.length, indent: line.length - line.trimStart().length, length: line.length });
                lines.push(line);
            } else lines.push(raw);
        }
    };
    const launchers = []; // host functions main() calls: [name, kind]
    let serial = 0;

    const elementwise = () => {
        const [base, params, body] = pick(MAPS);
        const name = `${base}_${++serial}`;
        const block = chance(0.1) ? pick([100, 200, 500]) : pick([128, 256, 512]);
        const grid_stride = chance(0.5);
        const args = argNames(params);
        let k = `\n__global__ void ${name}_kernel(${params}, int n) {\n`;
        if (grid_stride) {
            k += `    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n`;
            for (const s of body) k += `@        ${s}\n`;
            k += `    }\n`;
        } else {
            k += `@    int i = blockIdx.x * blockDim.x + threadIdx.x;\n`;
            k += `    if (i >= n) return;\n`;
            for (const s of body) k += `@    ${s}\n`;
        }
        k += `}\n\n`;
        k += `void ${name}(${params}, int n, cudaStream_t stream) {\n`;
        k += `@    const int block = ${block};\n`;
        k += `@    const int grid = (n + block - 1) / block;\n`;
        k += `@    ${name}_kernel<<<grid, block, 0, stream>>>(${args.join(', ')}, n);\n`;
        if (chance(0.7)) k += `@    CHECK(cudaGetLastError());\n`;
        k += `}\n`;
        add(k);
        launchers.push([name, params]);
    };

    const reduction = () => {
        const name = `reduce_${pick(['sum', 'norm', 'energy', 'mass'])}_${++serial}`;
        const threads = pick([256, 512]);
        add(`
__global__ void ${name}_kernel(const float *x, float *partial, int n) {
    __shared__ float cache[${threads}];
@    const int tid = threadIdx.x;
@    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
@    float v = 0.0f;
    if (i < n) v += x[i];
    if (i + blockDim.x < n) v += x[i + blockDim.x];
@    cache[tid] = v;
@    __syncthreads();
    for (int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) cache[tid] += cache[tid + s];
@        __syncthreads();
    }
    if (tid < 32) {
@        v = cache[tid] + cache[tid + 32];
@        v = warp_sum(v);
        if (tid == 0) partial[blockIdx.x] = v;
    }
}

float ${name}(const float *d_x, int n, cudaStream_t stream) {
@    const int threads = ${threads};
@    const int blocks = (n + threads * 2 - 1) / (threads * 2);
@    float *d_partial = nullptr;
@    CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
@    ${name}_kernel<<<blocks, threads, 0, stream>>>(d_x, d_partial, n);
@    CHECK(cudaGetLastError());
@    std::vector<float> partial(blocks);
@    CHECK(cudaMemcpyAsync(partial.data(), d_partial, blocks * sizeof(float), cudaMemcpyDeviceToHost, stream));
@    CHECK(cudaStreamSynchronize(stream));
@    double total = 0.0;
    for (int b = 0; b < blocks; ++b) total += partial[b];
@    CHECK(cudaFree(d_partial));
    return (float)total;
}
`);
        launchers.push([name, 'reduce']);
    };

    const transpose = () => {
        const name = `transpose_${++serial}`;
        const padded = chance(0.6);
        add(`
__global__ void ${name}_kernel(float *out, const float *in, int rows, int cols) {
    __shared__ float tile[TILE][TILE${padded ? ' + 1' : ''}];
@    int x = blockIdx.x * TILE + threadIdx.x;
@    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    }
@    __syncthreads();
@    x = blockIdx.y * TILE + threadIdx.x;
@    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

void ${name}(float *d_out, const float *d_in, int rows, int cols, cudaStream_t stream) {
@    dim3 block(TILE, BLOCK_ROWS);
@    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
@    ${name}_kernel<<<grid, block, 0, stream>>>(d_out, d_in, rows, cols);
@    CHECK(cudaGetLastError());
}
`);
        launchers.push([name, 'transpose']);
    };

    const matmul = () => {
        const name = `matmul_${++serial}`;
        add(`
// C = alpha * A * B + beta * C, A: m x k, B: k x n, row-major
__global__ void ${name}_kernel(const float *A, const float *B, float *C, int m, int n, int k, float alpha, float beta) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
@    const int row = blockIdx.y * TILE + threadIdx.y;
@    const int col = blockIdx.x * TILE + threadIdx.x;
@    float acc = 0.0f;
    for (int t = 0; t < (k + TILE - 1) / TILE; ++t) {
@        const int a_col = t * TILE + threadIdx.x;
@        const int b_row = t * TILE + threadIdx.y;
@        As[threadIdx.y][threadIdx.x] = (row < m && a_col < k) ? A[row * k + a_col] : 0.0f;
@        Bs[threadIdx.y][threadIdx.x] = (b_row < k && col < n) ? B[b_row * n + col] : 0.0f;
@        __syncthreads();
#pragma unroll
        for (int e = 0; e < TILE; ++e) acc += As[threadIdx.y][e] * Bs[e][threadIdx.x];
@        __syncthreads();
    }
    if (row < m && col < n) C[row * n + col] = alpha * acc + beta * C[row * n + col];
}

void ${name}(const float *d_A, const float *d_B, float *d_C, int m, int n, int k, cudaStream_t stream) {
@    dim3 block(TILE, TILE);
@    dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
@    ${name}_kernel<<<grid, block, 0, stream>>>(d_A, d_B, d_C, m, n, k, 1.0f, 0.0f);
@    CHECK(cudaGetLastError());
}
`);
        launchers.push([name, 'matmul']);
    };

    const stencil = () => {
        const name = `stencil_${++serial}`;
        const radius = pick([1, 2, 3, 4]);
        add(`
__global__ void ${name}_kernel(float *out, const float *in, int width, int height, float c0, float c1) {
@    const int x = blockIdx.x * blockDim.x + threadIdx.x;
@    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < ${radius} || y < ${radius} || x >= width - ${radius} || y >= height - ${radius}) return;
@    float v = c0 * in[y * width + x];
    for (int r = 1; r <= ${radius}; ++r) {
@        v += c1 * (in[y * width + x - r] + in[y * width + x + r]);
@        v += c1 * (in[(y - r) * width + x] + in[(y + r) * width + x]);
    }
@    out[y * width + x] = v;
}

void ${name}(float *d_out, const float *d_in, int width, int height, cudaStream_t stream) {
@    dim3 block(32, 8);
@    dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
@    ${name}_kernel<<<grid, block, 0, stream>>>(d_out, d_in, width, height, 0.5f, 0.125f / ${radius});
@    CHECK(cudaGetLastError());
}
`);
        launchers.push([name, 'stencil']);
    };

    const histogram = () => {
        const name = `histogram_${++serial}`;
        const bins = pick([64, 128, 256]);
        add(`
__global__ void ${name}_kernel(const float *x, unsigned int *bins, int n, float lo, float hi) {
    __shared__ unsigned int local[${bins}];
    for (int b = threadIdx.x; b < ${bins}; b += blockDim.x) local[b] = 0;
@    __syncthreads();
@    const float scale = ${bins} / (hi - lo);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
@        int b = (int)((x[i] - lo) * scale);
@        b = b < 0 ? 0 : (b >= ${bins} ? ${bins - 1} : b);
@        atomicAdd(&local[b], 1u);
    }
@    __syncthreads();
    for (int b = threadIdx.x; b < ${bins}; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

void ${name}(const float *d_x, unsigned int *d_bins, int n, cudaStream_t stream) {
@    CHECK(cudaMemsetAsync(d_bins, 0, ${bins} * sizeof(unsigned int), stream));
@    ${name}_kernel<<<264, 256, 0, stream>>>(d_x, d_bins, n, -4.0f, 4.0f);
@    CHECK(cudaGetLastError());
}
`);
        launchers.push([name, 'histogram']);
    };

    const scan = () => {
        const name = `scan_${++serial}`;
        add(`
// inclusive scan of one block of 1024 elements (Hillis-Steele, double buffered)
__global__ void ${name}_kernel(float *out, const float *in, int n) {
    __shared__ float buf[2][1024];
@    const int tid = threadIdx.x;
@    const int i = blockIdx.x * 1024 + tid;
@    int src = 0;
@    buf[0][tid] = i < n ? in[i] : 0.0f;
@    __syncthreads();
    for (int offset = 1; offset < 1024; offset *= 2) {
@        const int dst = 1 - src;
@        buf[dst][tid] = tid >= offset ? buf[src][tid] + buf[src][tid - offset] : buf[src][tid];
@        __syncthreads();
@        src = dst;
    }
    if (i < n) out[i] = buf[src][tid];
}

void ${name}(float *d_out, const float *d_in, int n, cudaStream_t stream) {
@    const int blocks = (n + 1023) / 1024;
@    ${name}_kernel<<<blocks, 1024, 0, stream>>>(d_out, d_in, n);
@    CHECK(cudaGetLastError());
}
`);
        launchers.push([name, 'scan']);
    };

    const particles = () => {
        const name = `integrate_${++serial}`;
        add(`
__global__ void ${name}_kernel(Particle *p, int n, float dt, float damping) {
@    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
@    Particle q = p[i];
@    const float inv_mass = q.mass > 0.0f ? 1.0f / q.mass : 0.0f;
@    q.vy -= 9.81f * dt * inv_mass * q.mass;
@    q.vx *= damping;
@    q.vy *= damping;
@    q.vz *= damping;
@    q.x += q.vx * dt;
@    q.y += q.vy * dt;
@    q.z += q.vz * dt;
    if (q.y < 0.0f) {
@        q.y = -q.y;
@        q.vy = -q.vy * 0.5f;
    }
@    p[i] = q;
}

void ${name}(Particle *d_p, int n, float dt, cudaStream_t stream) {
@    const int block = 256;
@    ${name}_kernel<<<(n + block - 1) / block, block, 0, stream>>>(d_p, n, dt, 0.999f);
@    CHECK(cudaGetLastError());
}
`);
        launchers.push([name, 'particles']);
    };

    const makers = [elementwise, elementwise, elementwise, reduction, transpose, matmul, stencil, histogram, scan, particles];
    // leave room for the host pipeline and main(): about 140 lines plus one or two per kernel
    while (lines.length + 140 + launchers.length * 1.2 < kernelTarget) pick(makers)();

    // ---- the host pipeline
    add(`
// ---------------------------------------------------------------------------
// host pipeline

struct Buffers {
    float *d_x = nullptr;
    float *d_y = nullptr;
    float *d_z = nullptr;
    float *d_w = nullptr;
    float *d_m = nullptr;
    unsigned int *d_bins = nullptr;
    Particle *d_particles = nullptr;
    float *h_pinned = nullptr;
    int n = 0;
    int side = 0;
};

static void allocate(Buffers &b, int n) {
@    b.n = n;
@    b.side = (int)sqrtf((float)n);
@    CHECK(cudaMalloc(&b.d_x, n * sizeof(float)));
@    CHECK(cudaMalloc(&b.d_y, n * sizeof(float)));
@    CHECK(cudaMalloc(&b.d_z, n * sizeof(float)));
@    CHECK(cudaMalloc(&b.d_w, n * sizeof(float)));
@    CHECK(cudaMalloc(&b.d_m, n * sizeof(float)));
@    CHECK(cudaMalloc(&b.d_bins, 256 * sizeof(unsigned int)));
@    CHECK(cudaMalloc(&b.d_particles, n * sizeof(Particle)));
@    CHECK(cudaMallocHost(&b.h_pinned, n * sizeof(float)));
}

static void release(Buffers &b) {
@    CHECK(cudaFree(b.d_x));
@    CHECK(cudaFree(b.d_y));
@    CHECK(cudaFree(b.d_z));
@    CHECK(cudaFree(b.d_w));
@    CHECK(cudaFree(b.d_m));
@    CHECK(cudaFree(b.d_bins));
@    CHECK(cudaFree(b.d_particles));
@    CHECK(cudaFreeHost(b.h_pinned));
}

static void fill(Buffers &b, cudaStream_t stream) {
@    std::vector<float> host(b.n);
    for (int i = 0; i < b.n; ++i) host[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
@    std::memcpy(b.h_pinned, host.data(), b.n * sizeof(float));
@    CHECK(cudaMemcpyAsync(b.d_x, b.h_pinned, b.n * sizeof(float), cudaMemcpyHostToDevice, stream));
@    CHECK(cudaMemcpyAsync(b.d_y, b.d_x, b.n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
@    CHECK(cudaMemcpyAsync(b.d_z, b.d_x, b.n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
@    CHECK(cudaMemsetAsync(b.d_w, 0, b.n * sizeof(float), stream));
@    CHECK(cudaMemsetAsync(b.d_m, 0, b.n * sizeof(float), stream));
@    std::vector<Particle> ps(b.n);
    for (int i = 0; i < b.n; ++i) {
@        ps[i] = Particle{(float)(i % 97), 10.0f + (float)(i % 13), (float)(i % 31), 0.0f, 0.0f, 0.0f, 1.0f, i};
    }
@    CHECK(cudaMemcpy(b.d_particles, ps.data(), b.n * sizeof(Particle), cudaMemcpyHostToDevice));
}

static Stats summarize(const float *h, int n) {
@    Stats s{0.0f, INFINITY, -INFINITY, 0};
    for (int i = 0; i < n; ++i) {
@        s.sum += h[i];
@        s.min = fminf(s.min, h[i]);
@        s.max = fmaxf(s.max, h[i]);
@        s.count += h[i] > 0.0f;
    }
    return s;
}

static float elapsed_ms(cudaEvent_t start, cudaEvent_t stop) {
@    float ms = 0.0f;
@    CHECK(cudaEventSynchronize(stop));
@    CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms;
}

static void run_step(Buffers &b, cudaStream_t stream, int step) {
@    const int n = b.n;
@    const int side = b.side;
`);
    const callFor = ([name, kind]) => {
        if (kind === 'reduce') return `@    float r_${name} = ${name}(b.d_x, n, stream);\n    if (step == 0) printf("${name}: %f\\n", r_${name});`;
        if (kind === 'transpose') return `@    ${name}(b.d_y, b.d_x, side, side, stream);`;
        if (kind === 'matmul') return `@    ${name}(b.d_x, b.d_y, b.d_z, 64, 64, 64, stream);`;
        if (kind === 'stencil') return `@    ${name}(b.d_w, b.d_x, side, side, stream);`;
        if (kind === 'histogram') return `@    ${name}(b.d_x, b.d_bins, n, stream);`;
        if (kind === 'scan') return `@    ${name}(b.d_m, b.d_x, n, stream);`;
        if (kind === 'particles') return `@    ${name}(b.d_particles, n, 0.001f, stream);`;
        // elementwise: fill its parameters from the buffers
        const pool = { y: 'b.d_y', x: 'b.d_x', a: 'b.d_x', b: 'b.d_z', c: 'b.d_w' };
        const args = kind.split(',').map((p) => {
            const parts = p.trim().split(/\s+/);
            const arg = parts[parts.length - 1].replace(/^\*+/, '');
            if (p.includes('*')) return pool[arg] ?? 'b.d_m';
            return { a: '0.5f', lo: '-1.0f', hi: '1.0f', t: '0.25f' }[arg] ?? '1.0f';
        });
        return `@    ${name}(${args.join(', ')}, n, stream);`;
    };
    for (const l of launchers) add(callFor(l));
    add(`}

int main(int argc, char **argv) {
@    const int n = argc > 1 ? atoi(argv[1]) : (1 << 20);
@    const int steps = argc > 2 ? atoi(argv[2]) : 10;
@    int device = 0;
@    CHECK(cudaGetDevice(&device));
@    cudaDeviceProp prop;
@    CHECK(cudaGetDeviceProperties(&prop, device));
@    printf("%s: %d SMs\\n", prop.name, prop.multiProcessorCount);
@    cudaStream_t stream;
@    CHECK(cudaStreamCreate(&stream));
@    cudaEvent_t start, stop;
@    CHECK(cudaEventCreate(&start));
@    CHECK(cudaEventCreate(&stop));
@    Buffers b;
@    allocate(b, n);
@    fill(b, stream);
@    CHECK(cudaEventRecord(start, stream));
    for (int step = 0; step < steps; ++step) {
@        run_step(b, stream, step);
@        cudaStreamSynchronize(stream);
    }
@    CHECK(cudaEventRecord(stop, stream));
@    printf("%d steps: %.3f ms\\n", steps, elapsed_ms(start, stop));
@    float *h_result = (float *)malloc(n * sizeof(float));
@    CHECK(cudaMemcpyAsync(h_result, b.d_y, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
@    CHECK(cudaStreamSynchronize(stream));
@    Stats s = summarize(h_result, n);
@    printf("sum %f min %f max %f positive %d\\n", s.sum, s.min, s.max, s.count);
@    free(h_result);
@    release(b);
@    CHECK(cudaEventDestroy(start));
@    CHECK(cudaEventDestroy(stop));
@    CHECK(cudaStreamDestroy(stream));
    return 0;
}
`);
    return { text: lines.join('\n') + '\n', editPoints, lines: lines.length };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    let minLines = 1500, seed = 1234;
    for (let i = 2; i < process.argv.length; i++) {
        if (process.argv[i] === '--lines') minLines = Number(process.argv[++i]);
        else if (process.argv[i] === '--seed') seed = Number(process.argv[++i]);
        else throw new Error(`unknown option ${process.argv[i]}`);
    }
    process.stdout.write(generateCudaFile(minLines, seed).text);
}
