#include "cli/cli.h"

int main(int argc, char** argv) { return shardscope::cli::Main(argc, argv); }
