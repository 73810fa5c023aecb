// base/whole_file.cpp — see whole_file.hpp.
#include "base/whole_file.hpp"

#include "base/cat.hpp"
#include "base/fd.hpp"
#include "base/sizes.hpp"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tracery::base {

std::string read_whole_file(const std::string &path, const WholeFileRules &rules, std::string *out)
{
	Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
	struct stat st {};
	if (!fd || ::fstat(fd.get(), &st) != 0)
		return cat(path, ": ", std::strerror(errno));
	if (!S_ISREG(st.st_mode))
		return cat(path, ": not a regular file ", rules.not_regular_note);
	if (rules.check)
		if (std::string why = rules.check(st); !why.empty())
			return why;
	if (st.st_size > static_cast<off_t>(rules.max_size))
		return cat(path, ": over ", format_size(rules.max_size), ", too large for ", rules.what);
	std::string text(static_cast<size_t>(st.st_size), '\0');
	size_t got = 0;
	while (got < text.size()) {
		const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			const int err = errno;
			if (rules.secret)
				::explicit_bzero(text.data(), text.size());
			return cat(path, ": ", std::strerror(err));
		}
		if (n == 0)
			break;
		got += static_cast<size_t>(n);
	}
	text.resize(got); // shorter: in place, no copy
	*out = std::move(text);
	return {};
}

} // namespace tracery::base
