/* Reduced reproducer (issue #37): on Mesa 22.3's llvmpipe (Rusticl), a loop in a kernel stops after
 * 65,535 iterations without an error: one work-item that writes out[t] = t + 1 for t < n leaves
 * out[65535] and beyond as they were. forcekit's rand48 showed it (`forcekit rand48 --count 65536
 * --work-items 1`: the last value 0; with 2 work-items the values from 131,071 on). llvmpipe caps
 * shader loops (gallivm's loop limiter, meant for graphics) and the cap applies to OpenCL kernels
 * too; POCL and Intel's runtime run the loop to the end. Not forcekit's: the kernel is plain
 * OpenCL C. It also bounds the pair loops: a work-item's j-loop over more than 65,535 steps (all
 * pairs without tiling at N > 65,535 x UNROLL_J) would be cut short on this device.
 *
 *   cc loop_limit.c -lOpenCL -o loop_limit
 *   RUSTICL_ENABLE=llvmpipe ./loop_limit [platform substring] [n]
 *
 * Prints the first index left unwritten; exit status 1 when there is one, 77 when no platform
 * matches. Measured here (Debian bookworm, mesa-opencl-icd 22.3.6): n = 65,535 right, 65,536 wrong
 * from index 65,535; POCL 3.1 right for every n tried (up to 1,000,000). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *source = "__kernel void count(__global uint *out, uint n)\n"
                            "{\n"
                            "    for (uint t = 0; t < n; ++t)\n"
                            "        out[t] = t + 1;\n"
                            "}\n";

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "rusticl";
    const cl_uint n = argc > 2 ? (cl_uint)strtoul(argv[2], NULL, 10) : 100000;
    cl_platform_id platforms[8];
    cl_uint count = 0;
    if (clGetPlatformIDs(8, platforms, &count) != CL_SUCCESS)
        return 2;
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
    cl_int err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    err = clBuildProgram(program, 1, &device, "", NULL, NULL);
    cl_kernel kernel = clCreateKernel(program, "count", &err);
    cl_uint *host = calloc(n, sizeof *host);
    cl_mem out = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                n * sizeof *host, host, &err);
    clSetKernelArg(kernel, 0, sizeof out, &out);
    clSetKernelArg(kernel, 1, sizeof n, &n);
    const size_t one = 1;
    err = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &one, &one, 0, NULL, NULL);
    err |= clEnqueueReadBuffer(queue, out, CL_TRUE, 0, n * sizeof *host, host, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "OpenCL error %d\n", err);
        return 2;
    }
    char name[256] = "", driver[64] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof driver, driver, NULL);
    cl_uint first_wrong = n;
    for (cl_uint t = 0; t < n && first_wrong == n; ++t)
        if (host[t] != t + 1)
            first_wrong = t;
    if (first_wrong < n)
        printf("%s, driver %s: a loop of %u iterations stopped at %u (out[%u] = %u)\n", name, driver,
               n, first_wrong, first_wrong, host[first_wrong]);
    else
        printf("%s, driver %s: a loop of %u iterations ran to the end\n", name, driver, n);
    return first_wrong < n;
}
