// The tracery command's way to the session daemon: the control library's
// protocol client (ctl/client.hpp), whose errors are the command's own too:
// main prints any of them as one line.
#pragma once

#include "ctl/client.hpp"

namespace tracery::cli {

using CliError = ctl::Error;
using ctl::bad_reply;
using ctl::exchange;
using ctl::post;
using ctl::request;

} // namespace tracery::cli
