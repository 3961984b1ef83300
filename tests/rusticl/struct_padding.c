/* Reduced reproducer (issue #37): on Mesa 22.3's llvmpipe (Rusticl), whole-struct copies of a
 * struct with tail padding, {long; int} (12 bytes of members, 16 with padding), into a private
 * array of such structs are lost: a kernel that copies four longs of a work-item into that array
 * and back (an identity) returns 0 for the first three and only the last right. With the padding
 * spelled out as a member ({long; int; int}), or with the fields assigned one by one, every value
 * comes back. forcekit's fixed64 accumulator was that struct (cl/accum/eft.clh): the half
 * neighbour lists' gather (an unpack into fk_acc acc[4]) returned zeros or a false overflow, the
 * symmetric loop's block pairs wrong forces. Not forcekit's: the kernel below is plain OpenCL C,
 * and POCL and Intel's runtime return the input.
 *
 *   cc struct_padding.c -lOpenCL -o struct_padding
 *   RUSTICL_ENABLE=llvmpipe ./struct_padding [platform substring]
 *
 * Prints each form's verdict; exit status 1 when a form loses values, 77 when no platform matches.
 * Measured here (Debian bookworm, mesa-opencl-icd 22.3.6): "implicit padding lost 48 of 64
 * values" (the first three of each work-item's four), explicit padding 0; POCL 3.1 and Intel's CPU
 * runtime 2026.2: 0 and 0. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

/* PADDED 0 or 1: the two forms of the same 16-byte struct. */
static const char *source = "typedef struct {\n"
                            "    long sum;\n"
                            "    int flag;\n"
                            "#if PADDED\n"
                            "    int padding;\n"
                            "#endif\n"
                            "} pair;\n"
                            "__kernel void copy(__global long *values)\n"
                            "{\n"
                            "    __global long *mine = values + get_global_id(0) * 4;\n"
                            "    pair held[4];\n"
                            "    for (int c = 0; c < 4; ++c) {\n"
                            "        const pair p = {mine[c], 0};\n"
                            "        held[c] = p;\n"
                            "    }\n"
                            "    for (int c = 0; c < 4; ++c)\n"
                            "        mine[c] = held[c].flag ? -1 : held[c].sum;\n"
                            "}\n";

enum { ITEMS = 16, VALUES = 4 * ITEMS };

/* Values of the identity copy that came back wrong; -1 when OpenCL failed. */
static int lost(cl_context context, cl_device_id device, cl_command_queue queue,
                const char *options)
{
    cl_int err;
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    if (err != CL_SUCCESS || clBuildProgram(program, 1, &device, options, NULL, NULL) != CL_SUCCESS)
        return -1;
    cl_kernel kernel = clCreateKernel(program, "copy", &err);
    cl_long host[VALUES];
    for (int v = 0; v < VALUES; ++v)
        host[v] = 1000000007LL * (v + 1);
    cl_mem buffer =
        clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    clSetKernelArg(kernel, 0, sizeof buffer, &buffer);
    const size_t global = ITEMS;
    err = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    err |= clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL);
    clReleaseMemObject(buffer);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    if (err != CL_SUCCESS)
        return -1;
    int wrong = 0;
    for (int v = 0; v < VALUES; ++v)
        wrong += host[v] != 1000000007LL * (v + 1);
    return wrong;
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "rusticl";
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
    char name[256] = "", driver[64] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof driver, driver, NULL);
    const int implicit = lost(context, device, queue, "-D PADDED=0");
    const int explicit = lost(context, device, queue, "-D PADDED=1");
    if (implicit < 0 || explicit < 0) {
        fprintf(stderr, "OpenCL error\n");
        return 2;
    }
    printf("%s, driver %s: implicit padding lost %d of %d values, explicit padding %d\n", name,
           driver, implicit, VALUES, explicit);
    return implicit || explicit;
}
