// base/fd.hpp — an owned file descriptor, closed when its owner goes.
//
// The one fd owner of the tree: sockets, memfds, stream files and trace
// directories all live in an Fd, so no path can leak one on an exception.
#pragma once

namespace tracery::base {

class Fd {
public:
	Fd() = default;
	explicit Fd(int fd) : fd_(fd) {}
	~Fd() { reset(); }
	Fd(Fd &&o) noexcept : fd_(o.release()) {}
	Fd &operator=(Fd &&o) noexcept
	{
		if (this != &o)
			reset(o.release());
		return *this;
	}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;

	int get() const noexcept { return fd_; }
	// Gives the descriptor up without closing it.
	int release() noexcept
	{
		const int f = fd_;
		fd_ = -1;
		return f;
	}
	// Closes the descriptor held (if any) and holds fd instead.
	void reset(int fd = -1) noexcept;
	explicit operator bool() const noexcept { return fd_ >= 0; }

private:
	int fd_ = -1;
};

} // namespace tracery::base
