/*
 * Reduced reproducer: oclgrind 21.10's --uninitialized check does not count clEnqueueFillBuffer as
 * initializing the buffer. A buffer filled with zeros and then incremented by atomic_inc (the
 * cells build does this with its per-cell counters, src/cells.c) is reported as
 *   "Uninitialized value written to global memory address ..." (kernel bump, the atomic_inc)
 * and reading it back in a kernel as "Controlflow depends on uninitialized value" (kernel plain).
 * Worse (kernel relay), values a kernel wrote over every filled byte are still reported when a
 * second kernel reads them: "Uninitialized value written to global memory" in that kernel (the
 * j-split reduction reading the poisoned-then-written partial sums, src/plan.c, hits this).
 * The same program with clEnqueueWriteBuffer instead of the fill reports nothing. OpenCL 1.2
 * sec. 5.2.2 defines the fill as writing the pattern to every byte, so oclgrind is wrong here;
 * src/core/devices/fill.c works around it on such devices.
 *   oclgrind --uninitialized ./oclgrind_fill_repro fill bump|plain|relay    (diagnostics)
 *   oclgrind --uninitialized ./oclgrind_fill_repro write bump|plain|relay   (clean)
 * Exit 0 when the kernel's results are right on the device it ran on, 1 otherwise, 2 on usage.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

static const char *source = "__kernel void bump(__global int *count, __global int *out)\n"
                            "{\n"
                            "    const int slot = atomic_inc(&count[0]);\n"
                            "    if (slot < 4)\n"
                            "        out[slot] = 1;\n"
                            "}\n"
                            "__kernel void plain(__global const int *count, __global int *out)\n"
                            "{\n"
                            "    if (count[get_global_id(0)] == 0)\n"
                            "        out[get_global_id(0)] = 2;\n"
                            "}\n"
                            "__kernel void produce(__global int *count)\n"
                            "{\n"
                            "    count[get_global_id(0)] = 3;\n"
                            "}\n"
                            "__kernel void relay(__global const int *count, __global int *out)\n"
                            "{\n"
                            "    out[get_global_id(0)] = count[get_global_id(0)] + 1;\n"
                            "}\n";

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "fill") && strcmp(argv[1], "write")) ||
        (strcmp(argv[2], "bump") && strcmp(argv[2], "plain") && strcmp(argv[2], "relay"))) {
        fprintf(stderr, "usage: oclgrind_fill_repro fill|write bump|plain|relay\n");
        return 2;
    }
    const int fill = strcmp(argv[1], "fill") == 0, bump = strcmp(argv[2], "bump") == 0;
    const int relay = strcmp(argv[2], "relay") == 0;
    cl_platform_id platform;
    cl_device_id device;
    cl_int err = clGetPlatformIDs(1, &platform, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "no OpenCL device (%d)\n", (int)err);
        return 1;
    }
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    err = clBuildProgram(program, 1, &device, "", NULL, NULL);
    cl_kernel kernel = clCreateKernel(program, argv[2], &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "building the reproducer failed (%d)\n", (int)err);
        return 1;
    }
    cl_mem count = clCreateBuffer(context, CL_MEM_READ_WRITE, 4 * sizeof(cl_int), NULL, &err);
    cl_mem out = clCreateBuffer(context, CL_MEM_READ_WRITE, 4 * sizeof(cl_int), NULL, &err);
    const cl_int zeros[4] = {0, 0, 0, 0};
    if (fill)
        err = clEnqueueFillBuffer(queue, count, zeros, sizeof zeros[0], 0, sizeof zeros, 0, NULL,
                                  NULL);
    else
        err = clEnqueueWriteBuffer(queue, count, CL_TRUE, 0, sizeof zeros, zeros, 0, NULL, NULL);
    err |= clEnqueueWriteBuffer(queue, out, CL_TRUE, 0, sizeof zeros, zeros, 0, NULL, NULL);
    err |= clSetKernelArg(kernel, 0, sizeof count, &count);
    err |= clSetKernelArg(kernel, 1, sizeof out, &out);
    const size_t items = bump ? 2 : 4;
    if (relay) { /* every element of count written by a kernel first */
        cl_kernel produce = clCreateKernel(program, "produce", &err);
        err |= clSetKernelArg(produce, 0, sizeof count, &count);
        err |= clEnqueueNDRangeKernel(queue, produce, 1, NULL, &items, NULL, 0, NULL, NULL);
        clReleaseKernel(produce);
    }
    err |= clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &items, NULL, 0, NULL, NULL);
    cl_int result[4] = {-1, -1, -1, -1};
    err |= clEnqueueReadBuffer(queue, out, CL_TRUE, 0, sizeof result, result, 0, NULL, NULL);
    const int right = err == CL_SUCCESS && (bump    ? result[0] == 1 && result[1] == 1 && !result[2]
                                            : relay ? result[0] == 4 && result[3] == 4
                                                    : result[0] == 2 && result[3] == 2);
    clReleaseMemObject(count);
    clReleaseMemObject(out);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    printf("%s %s: %d %d %d %d\n", argv[1], argv[2], result[0], result[1], result[2], result[3]);
    return right ? 0 : 1;
}
