/* `forcekit rand48`: not implemented yet. */
#include "commands.h"
#include "common.h"

int cmd_rand48(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("rand48", "not yet available");
    return CLI_EXIT_USAGE;
}
