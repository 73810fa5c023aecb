// base/test_temp_dir.hpp — for tests: a new directory under /tmp, removed
// with everything in it when the object goes.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

namespace tracery::base {

class TestTempDir {
public:
	// /tmp/PREFIX-XXXXXX; throws std::system_error if it cannot be made.
	explicit TestTempDir(const std::string &prefix = "tracery-test")
	{
		std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
		if (!mkdtemp(tmpl.data()))
			throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
		path_ = tmpl;
	}
	~TestTempDir()
	{
		std::error_code ignored;
		std::filesystem::remove_all(path_, ignored);
	}
	TestTempDir(const TestTempDir &) = delete;
	TestTempDir &operator=(const TestTempDir &) = delete;

	const std::string &path() const { return path_; }

private:
	std::string path_;
};

} // namespace tracery::base
