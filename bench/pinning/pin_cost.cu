/* pin_cost.cu: what pinning host memory costs and what it buys on this machine.

   For each size: the time of one copy host->device and device->host from
   pageable memory (std::vector) and from pinned memory, the time
   cudaHostRegister / cudaHostUnregister take to pin and unpin the vector's
   pages, and the time cudaMallocHost / cudaFreeHost take. Medians of REPS.
   advise's pageable-copy gain model (rules/measure/measure_models.c) is checked
   against these figures.

       nvcc -O2 -o pin_cost pin_cost.cu && ./pin_cost            */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t err_ = (call);                                                     \
        if (err_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/* one blocking copy, timed on the host (cudaMemcpy returns when done) */
static double copy_ms(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    double t0 = now_ms();
    CHECK(cudaMemcpy(dst, src, bytes, kind));
    return now_ms() - t0;
}

int main() {
    const int REPS = 5;
    const size_t sizes_mb[] = {1, 4, 16, 64, 256};
    CHECK(cudaFree(0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, medians of %d\n", prop.name, REPS);
    printf("%8s %10s %10s %10s %10s %10s %10s %10s %10s\n", "MB", "h2d_page", "h2d_pin", "d2h_page", "d2h_pin",
           "register", "unregist", "mallocH", "freeH");
    for (size_t mb : sizes_mb) {
        size_t bytes = mb << 20;
        void *dev;
        CHECK(cudaMalloc(&dev, bytes));
        std::vector<char> page(bytes, 1);
        std::vector<double> hp, hn, dp, dn, reg, unreg, mh, fh;
        for (int r = 0; r < REPS; r++) {
            hp.push_back(copy_ms(dev, page.data(), bytes, cudaMemcpyHostToDevice));
            dp.push_back(copy_ms(page.data(), dev, bytes, cudaMemcpyDeviceToHost));
            /* a fresh vector each time: pages already pinned once may be cheaper */
            std::vector<char> fresh(bytes, 2);
            double t0 = now_ms();
            CHECK(cudaHostRegister(fresh.data(), bytes, cudaHostRegisterDefault));
            reg.push_back(now_ms() - t0);
            hn.push_back(copy_ms(dev, fresh.data(), bytes, cudaMemcpyHostToDevice));
            dn.push_back(copy_ms(fresh.data(), dev, bytes, cudaMemcpyDeviceToHost));
            t0 = now_ms();
            CHECK(cudaHostUnregister(fresh.data()));
            unreg.push_back(now_ms() - t0);
            void *pinned;
            t0 = now_ms();
            CHECK(cudaMallocHost(&pinned, bytes));
            mh.push_back(now_ms() - t0);
            memset(pinned, 3, bytes);
            t0 = now_ms();
            CHECK(cudaFreeHost(pinned));
            fh.push_back(now_ms() - t0);
        }
        printf("%8zu %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", mb, median(hp), median(hn),
               median(dp), median(dn), median(reg), median(unreg), median(mh), median(fh));
        CHECK(cudaFree(dev));
    }
    return 0;
}
