/* The subcommands of `forcekit`. Each takes its own argv (argv[0] is the command name) and returns
 * the process exit code. */
#ifndef FK_CLI_COMMANDS_H
#define FK_CLI_COMMANDS_H

int cmd_devices(int argc, char **argv);
int cmd_forces(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_accuracy(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_sumtest(int argc, char **argv);
int cmd_doundo(int argc, char **argv);
int cmd_generate(int argc, char **argv);
/* The models `generate` writes, "plummer, lj-fluid, ...": its own list, for the top-level usage. */
const char *cmd_generate_models(void);
int cmd_rand48(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_selftest(int argc, char **argv);

#endif
