/* `forcekit simulate`: not implemented yet. */
#include "commands.h"
#include "common.h"

int cmd_simulate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("simulate", "not yet available");
    return CLI_EXIT_USAGE;
}
