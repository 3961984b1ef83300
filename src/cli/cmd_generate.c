/* `forcekit generate`: not implemented yet. */
#include "commands.h"
#include "common.h"

int cmd_generate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("generate", "not yet available");
    return CLI_EXIT_USAGE;
}
