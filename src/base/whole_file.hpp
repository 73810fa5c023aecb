// base/whole_file.hpp — a small configuration file read whole, bounded:
// opened without following into a FIFO's wait or a terminal (O_NONBLOCK,
// O_NOCTTY), a regular file only, at most a given size, checked (its
// owner, its mode) before a byte is read, and for a file of secrets no copy
// of its bytes left behind on a failure. The relay's keys file and a PEM
// file of CAs are read this way.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <string>

namespace tracery::base {

struct WholeFileRules {
	size_t max_size = 0;
	std::string what; // what the file should be, for errors: "a keys file", "a PEM file of certificates"
	std::string not_regular_note; // after "PATH: not a regular file " when it is not one
	// Before the file is read: "" or why it may not be (one line naming the path).
	std::function<std::string(const struct stat &)> check;
	bool secret = false; // its bytes are wiped from what a failure leaves
};

// "" and *out set to the file's bytes, or why not (one line naming the path).
std::string read_whole_file(const std::string &path, const WholeFileRules &rules, std::string *out);

} // namespace tracery::base
