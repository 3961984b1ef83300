/* Reduced reproducer (issue #37): the all-zero forces of fixed64, narumi, ti, composite,
 * nitadori (and now and then float) on Mesa 22.3's Rusticl (llvmpipe). Not forcekit's kernels:
 * they compute the right sums (read back with a blocking read they are right). Rusticl 22.3
 * returns from clFinish before a non-blocking clEnqueueReadBuffer queued earlier has written host
 * memory, so a caller that waits with clFinish (as fk_eval_wait did) reads what the memory held
 * before: zeros. OpenCL 1.2, 5.13: clFinish "does not return until all previously queued commands
 * in command_queue are issued to the associated device and have completed". Waiting on the read's
 * own event (clWaitForEvents) works; forcekit now does that. The same lag shows in event status:
 * after the read's event completed, the launch queued before it may still say CL_SUBMITTED.
 *
 *   cc clfinish_read.c -lOpenCL -o clfinish_read
 *   RUSTICL_ENABLE=llvmpipe ./clfinish_read [platform substring] [rounds] [mode] [launch event]
 *
 * mode: "pinned" (default: read into the mapped pointer of a CL_MEM_ALLOC_HOST_PTR buffer, as
 * forcekit's staging, then clFlush + clFinish), "malloc" (the same into malloc'ed memory), "event"
 * (pinned, then clWaitForEvents on the read: the fix), "blocking" (a blocking read). launch event
 * 1: the kernel launch takes an event too. Prints the rounds whose values are not what the kernel
 * wrote; exit status 1 when any were, 77 when no platform matches.
 *
 * Measured here (Debian bookworm, mesa-opencl-icd 22.3.6, LLVM 15, 2 cores): pinned 7-20 of 20
 * rounds wrong (all 6000 values 0), malloc 20 of 20, event 0, blocking 0; POCL 3.1: 0 in every
 * mode. A freed or unmapped buffer written after such an early clFinish is also the likely cause
 * of the one "double free or corruption" abort seen with fixed64. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *source =
    "__kernel void fill(__global float *out, __global const float *in, int n, int work)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    float v = 0;\n"
    "    for (int k = 0; k < work; ++k) v += 1.0f / (1.0f + k + i);\n" /* keep the device busy */
    "    out[i] = in[i] + 1.0f + 0.0f * v;\n"
    "}\n";

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cl_int e_ = (call);                                                                      \
        if (e_ != CL_SUCCESS) {                                                                  \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, e_);                 \
            return 2;                                                                            \
        }                                                                                        \
    } while (0)

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "rusticl";
    const int rounds = argc > 2 ? atoi(argv[2]) : 50;
    const char *mode = argc > 3 ? argv[3] : "pinned";
    cl_platform_id platforms[8];
    cl_uint count = 0;
    CHECK(clGetPlatformIDs(8, platforms, &count));
    cl_platform_id platform = NULL;
    for (cl_uint p = 0; p < count; ++p) {
        char name[256] = "";
        clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
        for (char *c = name; *c; ++c)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        if (strstr(name, want))
            platform = platforms[p];
    }
    if (!platform) {
        fprintf(stderr, "no platform matching '%s'\n", want);
        return 77;
    }
    cl_device_id device;
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    char device_name[256] = "", driver[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof device_name, device_name, NULL);
    clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof driver, driver, NULL);
    cl_int err;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    CHECK(err);
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(program, 1, &device, "", NULL, NULL));
    cl_kernel kernel = clCreateKernel(program, "fill", &err);
    CHECK(err);

    const int n = 6000, work = 2000;
    const size_t bytes = n * sizeof(float);
    cl_mem out = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    cl_mem staging = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes,
                                    NULL, &err);
    CHECK(err);
    float *host = clEnqueueMapBuffer(queue, staging, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                     bytes, 0, NULL, NULL, &err);
    CHECK(err);
    cl_mem in = clCreateBuffer(context, CL_MEM_READ_ONLY, bytes, NULL, &err);
    CHECK(err);
    cl_mem upload = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes,
                                   NULL, &err);
    CHECK(err);
    float *up = clEnqueueMapBuffer(queue, upload, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes,
                                   0, NULL, NULL, &err);
    CHECK(err);
    if (strcmp(mode, "malloc") == 0) {
        host = malloc(bytes);
        up = malloc(bytes);
    }
    const int blocking = strcmp(mode, "blocking") == 0;
    const int wait_event = strcmp(mode, "event") == 0;
    const int launch_event = argc > 4 && atoi(argv[4]) != 0;

    int bad_rounds = 0;
    for (int r = 0; r < rounds; ++r) {
        memset(host, 0, bytes);
        for (int i = 0; i < n; ++i)
            up[i] = (float)(i + r);
        CHECK(clEnqueueWriteBuffer(queue, in, blocking ? CL_TRUE : CL_FALSE, 0, bytes, up, 0,
                                   NULL, NULL));
        CHECK(clSetKernelArg(kernel, 0, sizeof out, &out));
        CHECK(clSetKernelArg(kernel, 1, sizeof in, &in));
        CHECK(clSetKernelArg(kernel, 2, sizeof n, &n));
        CHECK(clSetKernelArg(kernel, 3, sizeof work, &work));
        const size_t local = 32, global = (n + local - 1) / local * local;
        cl_event launch;
        cl_event read;
        launch = NULL;
        CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, 0, NULL,
                                     launch_event ? &launch : NULL));
        CHECK(clEnqueueReadBuffer(queue, out, blocking ? CL_TRUE : CL_FALSE, 0, bytes, host, 0,
                                  NULL, &read));
        CHECK(clFlush(queue));
        if (wait_event)
            CHECK(clWaitForEvents(1, &read));
        else
            CHECK(clFinish(queue));
        /* clFinish "does not return until all previously queued commands ... have completed" */
        cl_int launch_state = 1, read_state = 1;
        if (launch)
            clGetEventInfo(launch, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof launch_state,
                           &launch_state, NULL);
        else
            launch_state = CL_COMPLETE;
        clGetEventInfo(read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof read_state, &read_state,
                       NULL);
        if (launch_state != CL_COMPLETE || read_state != CL_COMPLETE)
            printf("round %d: after the wait, the launch's status is %d and the read's %d "
                   "(CL_COMPLETE is 0)\n",
                   r, launch_state, read_state);
        if (launch)
            clReleaseEvent(launch);
        clReleaseEvent(read);
        int wrong = 0;
        for (int i = 0; i < n; ++i)
            wrong += host[i] != (float)(i + r) + 1.0f;
        if (wrong) {
            ++bad_rounds;
            printf("round %d: %d of %d values wrong (host[0] = %g)\n", r, wrong, n, host[0]);
        }
    }
    printf("%s, driver %s, mode %s: %d of %d rounds wrong\n", device_name, driver, mode,
           bad_rounds, rounds);
    return bad_rounds ? 1 : 0;
}
