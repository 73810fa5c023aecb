// The end of a program's command-line parsing, the same for tracery,
// traceryd and tracery-relayd: --dump-cli-json answered
// (cli_description.hpp), --help and --version printed with exit status 0,
// and a mistake told on stderr in one line that says where the help is,
// with exit status 2. Header-only: only the programs' main.cpp, which
// include CLI11, use it.
#pragma once

#include "base/cli_description.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <optional>

namespace tracery::base {

// Parses the command line into app: std::nullopt when the program goes on,
// else the status main returns. A mistake is told by explain when it is
// given (the command knows its verbs), else as
// "NAME: WHAT; see `NAME --help`".
inline std::optional<int> parse_command_line(CLI::App &app, int argc, char **argv,
                                             const std::function<void(const CLI::ParseError &)> &explain = {})
{
	if (dump_cli_if_asked(app, argc, argv))
		return 0;
	try {
		app.parse(argc, argv);
		return std::nullopt;
	} catch (const CLI::ParseError &e) {
		if (e.get_exit_code() == 0)
			return app.exit(e);
		if (explain)
			explain(e);
		else
			fprintf(stderr, "%s: %s; see `%s --help`\n", app.get_name().c_str(), e.what(),
			        app.get_name().c_str());
		return 2;
	}
}

} // namespace tracery::base
