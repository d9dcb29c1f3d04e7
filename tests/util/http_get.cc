#include "tests/util/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gopt::testing {

absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to :", port));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (write(fd, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::InternalError("write failed");
  }
  std::string answer;
  char buffer[8192];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) answer.append(buffer, n);
  close(fd);
  const size_t body = answer.find("\r\n\r\n");
  if (!absl::StartsWith(answer, "HTTP/1.1 200") &&
      !absl::StartsWith(answer, "HTTP/1.0 200")) {
    return absl::InternalError(
        absl::StrCat("HTTP answer: ", answer.substr(0, answer.find('\r'))));
  }
  return body == std::string::npos ? "" : answer.substr(body + 4);
}

double PrometheusValue(const std::string& exposition,
                       const std::string& series) {
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (!absl::StartsWith(line, series)) continue;
    absl::string_view rest = line.substr(series.size());
    if (rest.empty() || rest[0] != ' ') continue;
    double value = 0;
    if (absl::SimpleAtod(rest.substr(1), &value)) return value;
  }
  return -1;
}

}  // namespace gopt::testing
