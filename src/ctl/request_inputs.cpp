// Paths made absolute and the relay's key and CA files read before a
// request is sent: see request_inputs.hpp.
#include "ctl/request_inputs.hpp"

#include "ctl/client.hpp"

#include "control/auth.hpp"
#include "control/relay_protocol.hpp"
#include "control/relay_url.hpp"
#include "control/tls.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace tracery::ctl {

std::string absolute_path(const std::string &path)
{
	if (path.empty())
		throw Error("an empty path: give a directory or a file");
	if (path[0] == '/')
		return path;
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		throw Error("cannot resolve '" + path + "': " + strerror(errno));
	return std::string(cwd) + "/" + path;
}

std::string snapshot_destination(const std::string &url)
{
	if (url.rfind("net://", 0) == 0) {
		std::string why;
		if (!control::relay::parse_relay_url(url, control::relay::kDefaultPort, &why, "snapshot URL"))
			throw Error(why);
		return url;
	}
	if (url.find("://") != std::string::npos && url.rfind("file://", 0) != 0)
		throw Error("'" + url +
		            "': snapshots are written to a directory (DIR or file://DIR) or sent to a relay "
		            "(net://HOST[:PORT])");
	const std::string path = url.rfind("file://", 0) == 0 ? url.substr(7) : url;
	if (path.empty())
		throw Error("no directory given: DIR or file://DIR");
	return absolute_path(path);
}

std::string absolute_probe_spec(const std::string &spec)
{
	const size_t colon = spec.find(':');
	if (colon == std::string::npos || colon + 1 >= spec.size() || spec[colon + 1] == '/')
		return spec; // no path, or an absolute one: the daemon tells what is wrong with the spec
	const size_t path_end = spec.find(':', colon + 1);
	const std::string path =
		spec.substr(colon + 1, path_end == std::string::npos ? path_end : path_end - colon - 1);
	return spec.substr(0, colon + 1) + absolute_path(path) +
	       (path_end == std::string::npos ? "" : spec.substr(path_end));
}

void add_relay_security(const std::string &key_file, const std::string &ca_file, control::Create &req,
                        const char *key_option, const char *ca_option)
{
	if (!key_file.empty()) {
		control::auth::Key key;
		if (std::string why = control::auth::load_key(key_file, &key); !why.empty())
			throw Error(std::string(key_option) + " " + why);
		req.relay_key_name = key.name;
		req.relay_key_secret = control::auth::secret_hex(key.secret);
	}
	if (!ca_file.empty()) {
		std::string pem;
		control::tls::Context check;
		std::string why = control::tls::Context::read_pem_file(ca_file, &pem);
		if (why.empty())
			why = control::tls::Context::client_from_pem(pem, ca_file, &check);
		if (!why.empty())
			throw Error(std::string(ca_option) + " " + why);
		req.relay_ca_pem = std::move(pem);
	}
}

} // namespace tracery::ctl
