/* Which OpenCL enqueue calls return before the device is done? A time-stepping code overlaps its
 * own work with the device's only if every call of the "start" half returns at once. This probe
 * enqueues a kernel that runs for about SPIN microseconds, then, one at a time, each kind of
 * command the step paths (fk_eval_compute_async, fk_sources_start) put behind it, and prints how
 * long each enqueue call took on the host: a call that blocks until the kernel ends shows the
 * kernel's duration. Commands: a non-blocking write from pinned memory (a mapped
 * CL_MEM_ALLOC_HOST_PTR buffer) and from malloc'd memory, a fill, a non-blocking read into pinned
 * and into malloc'd memory, a device-to-device copy, a marker, clFlush, another kernel; and the
 * first kernel's own enqueue onto the idle queue. PROFILING 0 creates the queue without
 * CL_QUEUE_PROFILING_ENABLE and asks for no events, to see what timing costs each command.
 *   bench_async_probe [PLATFORM:DEVICE] [SPIN_ITERATIONS] [PROFILING]     (JSON on stdout) */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *source = "__kernel void spin(__global float *x, const int n) {\n"
                            "    float v = x[get_global_id(0)];\n"
                            "    for (int i = 0; i < n; ++i) v = v * 0.9999999f + 1e-7f;\n"
                            "    x[get_global_id(0)] = v;\n"
                            "}\n";

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int e_ = (call);                                                                        \
        if (e_ != CL_SUCCESS) {                                                                    \
            fprintf(stderr, "bench_async_probe: %s failed: %d\n", #call, (int)e_);                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    unsigned p_index = 0, d_index = 0;
    if (argc > 1 && sscanf(argv[1], "%u:%u", &p_index, &d_index) != 2) {
        fprintf(stderr,
                "usage: bench_async_probe [PLATFORM:DEVICE] [SPIN_ITERATIONS] [PROFILING]\n");
        return 2;
    }
    const int spin = argc > 2 ? atoi(argv[2]) : 20000;
    const int profiling = argc > 3 ? atoi(argv[3]) != 0 : 1;
    cl_platform_id platforms[16];
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(16, platforms, &np));
    if (p_index >= np)
        return fprintf(stderr, "bench_async_probe: no platform %u\n", p_index), 1;
    cl_device_id devices[16];
    cl_uint nd = 0;
    CHECK(clGetDeviceIDs(platforms[p_index], CL_DEVICE_TYPE_ALL, 16, devices, &nd));
    if (d_index >= nd)
        return fprintf(stderr, "bench_async_probe: no device %u\n", d_index), 1;
    cl_device_id device = devices[d_index];
    char name[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue queue =
        clCreateCommandQueue(context, device, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    CHECK(err);
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(program, 1, &device, "", NULL, NULL));
    cl_kernel kernel = clCreateKernel(program, "spin", &err);
    CHECK(err);
    const size_t bytes = 64 * 1024, items = 1024;
    cl_mem work = clCreateBuffer(context, CL_MEM_READ_WRITE, items * sizeof(float), NULL, &err);
    CHECK(err);
    cl_mem dev = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    cl_mem dev2 = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    cl_mem staging =
        clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
    CHECK(err);
    void *pinned = clEnqueueMapBuffer(queue, staging, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes,
                                      0, NULL, NULL, &err);
    CHECK(err);
    void *pageable = calloc(1, bytes);
    memset(pinned, 0, bytes);
    float zero = 0;
    CHECK(clEnqueueFillBuffer(queue, work, &zero, sizeof zero, 0, items * sizeof(float), 0, NULL,
                              NULL));
    CHECK(clSetKernelArg(kernel, 0, sizeof work, &work));
    CHECK(clSetKernelArg(kernel, 1, sizeof spin, &spin));
    CHECK(clFinish(queue));

    static const char *what[] = {"kernel onto the idle queue",
                                 "write from pinned",
                                 "write from pageable",
                                 "fill",
                                 "read into pinned",
                                 "read into pageable",
                                 "copy device to device",
                                 "marker",
                                 "flush",
                                 "kernel"};
    enum { N_KINDS = sizeof what / sizeof what[0] };
    double kernel_seconds = 0;
    printf("{\n  \"bench\": \"async_probe\",\n  \"device\": \"%s\",\n  \"spin\": %d,\n"
           "  \"enqueue_seconds\": {",
           name, spin);
    for (int kind = 0; kind < N_KINDS; ++kind) {
        double best = 1e9, best_total = 1e9, best_first = 1e9;
        for (int rep = 0; rep < 7; ++rep) {
            const size_t global = items;
            cl_event done = NULL;
            const double t0 = now();
            CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL,
                                         profiling ? &done : NULL));
            const double t1 = now();
            switch (kind) {
            case 1:
                CHECK(clEnqueueWriteBuffer(queue, dev, CL_FALSE, 0, bytes, pinned, 0, NULL, NULL));
                break;
            case 2:
                CHECK(
                    clEnqueueWriteBuffer(queue, dev, CL_FALSE, 0, bytes, pageable, 0, NULL, NULL));
                break;
            case 3:
                CHECK(clEnqueueFillBuffer(queue, dev, &zero, sizeof zero, 0, bytes, 0, NULL, NULL));
                break;
            case 4:
                CHECK(clEnqueueReadBuffer(queue, dev, CL_FALSE, 0, bytes, pinned, 0, NULL, NULL));
                break;
            case 5:
                CHECK(clEnqueueReadBuffer(queue, dev, CL_FALSE, 0, bytes, pageable, 0, NULL, NULL));
                break;
            case 6:
                CHECK(clEnqueueCopyBuffer(queue, dev, dev2, 0, 0, bytes, 0, NULL, NULL));
                break;
            case 7: {
                cl_event marker = NULL;
                CHECK(clEnqueueMarkerWithWaitList(queue, 0, NULL, profiling ? &marker : NULL));
                if (marker)
                    clReleaseEvent(marker);
                break;
            }
            case 8:
                CHECK(clFlush(queue));
                break;
            case 9: { /* a second, short kernel behind the first */
                const size_t one = 1;
                CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &one, NULL, 0, NULL, NULL));
                break;
            }
            default:
                break;
            }
            const double t2 = now();
            CHECK(clFinish(queue));
            const double t3 = now();
            if (done) {
                cl_ulong start = 0, end = 0;
                clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                        NULL);
                clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
                clReleaseEvent(done);
                if (kind == 0)
                    kernel_seconds = 1e-9 * (double)(end - start);
            } else if (kind == 0) {
                kernel_seconds = t3 - t0; /* no profiling: the host's view */
            }
            if (t1 - t0 < best_first)
                best_first = t1 - t0;
            if (t2 - t1 < best)
                best = t2 - t1;
            if (t3 - t0 < best_total)
                best_total = t3 - t0;
        }
        if (kind == 0)
            best = best_first; /* "kernel alone": its own enqueue onto the idle queue */
        printf("%s\n    \"%s\": %.3e", kind ? "," : "", what[kind], best);
    }
    printf("\n  },\n  \"profiling\": %s,\n  \"kernel_seconds\": %.3e\n}\n",
           profiling ? "true" : "false", kernel_seconds);
    clEnqueueUnmapMemObject(queue, staging, pinned, 0, NULL, NULL);
    clFinish(queue);
    free(pageable);
    return 0;
}
