// What some requests need from the caller's side before they are sent, for
// the tracery command and the C API alike (one implementation, the same
// messages): paths made absolute against the caller's working directory
// (the daemon does not share it), and the files of a relay's key and CAs
// read with the caller's rights (the daemon opens no file for a client).
// Each throws ctl::Error (ErrorKind::invalid) naming what is wrong.
#pragma once

#include "control/messages.hpp"

#include <string>

namespace tracery::ctl {

// PATH (not empty) made absolute against the current directory.
std::string absolute_path(const std::string &path);

// Where a snapshot goes: a directory (DIR or file://DIR, made absolute) or a
// relay (net://HOST[:PORT], checked).
std::string snapshot_destination(const std::string &url);

// A userspace probe's spec (elf:PATH:SYMBOL[+OFFSET], sdt:PATH:PROVIDER:NAME)
// with its PATH made absolute.
std::string absolute_probe_spec(const std::string &spec);

// A session sent to a relay: the key file (a keys file of one key, readable
// by its owner only) and the PEM file of the CAs that sign the relay's TLS
// certificate, read into the request ("": none). key_option and ca_option
// name them in the messages (the command's options, the C API's fields).
void add_relay_security(const std::string &key_file, const std::string &ca_file, control::Create &req,
                        const char *key_option, const char *ca_option);

} // namespace tracery::ctl
