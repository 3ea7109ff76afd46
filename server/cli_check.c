#include "cli.h"
int cli_check(int argc, char **argv) { return 0; }
