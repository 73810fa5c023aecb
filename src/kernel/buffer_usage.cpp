// kernel/buffer_usage.cpp — per-CPU buffer usage of an instance: see buffer_usage.hpp.
#include "kernel/buffer_usage.hpp"

#include "kernel/tracefs.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <stdexcept>

namespace tracery::kernel {

uint64_t stats_value(std::string_view stats, std::string_view name, bool *found)
{
	*found = false;
	size_t at = 0;
	while (at < stats.size()) {
		const size_t end = std::min(stats.find('\n', at), stats.size());
		std::string_view line = stats.substr(at, end - at);
		at = end + 1;
		if (line.size() <= name.size() || !line.starts_with(name) || line[name.size()] != ':')
			continue;
		line.remove_prefix(name.size() + 1);
		while (!line.empty() && line.front() == ' ')
			line.remove_prefix(1);
		uint64_t v = 0;
		const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
		if (ec != std::errc() || p == line.data())
			return 0;
		*found = true;
		return v;
	}
	return 0;
}

BufferUsage read_buffer_usage(const std::string &instance_path)
{
	BufferUsage out;
	bool found = false;
	const std::string size = read_control(instance_path + "/buffer_size_kb");
	out.buffer_bytes = stats_value("kb: " + size, "kb", &found) * 1024;
	std::vector<uint32_t> cpus;
	std::error_code ec;
	for (const auto &entry : std::filesystem::directory_iterator(instance_path + "/per_cpu", ec)) {
		const std::string name = entry.path().filename().string();
		uint32_t cpu = 0;
		if (name.starts_with("cpu") &&
		    std::from_chars(name.data() + 3, name.data() + name.size(), cpu).ec == std::errc())
			cpus.push_back(cpu);
	}
	if (ec)
		throw TracefsError(instance_path + "/per_cpu: " + errno_text(ec.value()), ec.value());
	std::sort(cpus.begin(), cpus.end());
	for (uint32_t cpu : cpus) {
		const std::string path = instance_path + "/per_cpu/cpu" + std::to_string(cpu) + "/stats";
		const uint64_t bytes = stats_value(read_control(path), "bytes", &found);
		if (!found)
			throw std::runtime_error(path + " has no 'bytes:' line");
		out.bytes.push_back(bytes);
	}
	return out;
}

} // namespace tracery::kernel
