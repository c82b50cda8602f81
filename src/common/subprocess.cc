#include "common/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

namespace shoal {

Result<Subprocess> Subprocess::Spawn(const std::vector<std::string>& argv, const std::string& log_path,
                                     const std::vector<std::string>& env) {
  return Start(argv, log_path, env, -1);
}

Result<Subprocess> Subprocess::SpawnWithSocket(const std::vector<std::string>& argv, const std::string& log_path,
                                               const std::vector<std::string>& env, int socket) {
  if (socket < 0) return InvalidInput("no socket to pass");
  return Start(argv, log_path, env, socket);
}

// `socket` -1: a plain child, sent SIGTERM when the spawning thread ends.
Result<Subprocess> Subprocess::Start(const std::vector<std::string>& argv, const std::string& log_path,
                                     const std::vector<std::string>& env, int socket) {
  if (argv.empty()) return InvalidInput("empty command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Built before fork: the child may only call async-signal-safe functions.
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  for (const auto& kv : env) {
    const std::string name = kv.substr(0, kv.find('='));
    if (getenv(name.c_str()) == nullptr) envp.push_back(const_cast<char*>(kv.c_str()));
  }
  envp.push_back(nullptr);
  int log_fd = -1;
  if (!log_path.empty()) {
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return Internal("cannot open " + log_path + ": " + std::strerror(errno));
  }
  // The child writes exec's errno here; closed on a successful exec, the
  // pipe reads empty. (The parent's read below waits for one or the other.)
  int exec_error[2];
  if (::pipe2(exec_error, O_CLOEXEC) != 0) {
    if (log_fd >= 0) ::close(log_fd);
    return Internal(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {exec_error[0], exec_error[1], log_fd}) {
      if (fd >= 0) ::close(fd);
    }
    return Internal(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    setpgid(0, 0);
    if (socket < 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);  // the parent died before prctl
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // exec keeps the mask; the parent blocks signals
    if (log_fd >= 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
    }
    if (socket == 3) {
      fcntl(3, F_SETFD, 0);  // keep it across exec
    } else if (socket >= 0) {
      dup2(socket, 3);  // the copy does not close on exec
    }
    execvpe(args[0], args.data(), envp.data());
    const int e = errno;
    (void)!::write(exec_error[1], &e, sizeof e);  // nothing to do if it fails: the parent sees a dead child
    _exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
  ::close(exec_error[1]);
  int e = 0;
  ssize_t n;
  do {
    n = ::read(exec_error[0], &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  ::close(exec_error[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    waitpid(pid, nullptr, 0);
    return Internal("cannot run " + argv[0] + ": " + std::strerror(e));
  }
  return Subprocess(pid);
}

Subprocess& Subprocess::operator=(Subprocess&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0) Stop(SIGKILL, std::chrono::milliseconds(0));
    pid_ = o.pid_;
    o.pid_ = -1;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0) Stop(SIGKILL, std::chrono::milliseconds(0));
}

bool Subprocess::Running() {
  if (pid_ <= 0) return false;
  int st = 0;
  const pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == 0) return true;
  status_ = st;
  pid_ = -1;
  return false;
}

void Subprocess::Signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

int Subprocess::Stop(int sig, std::chrono::milliseconds grace) {
  if (pid_ <= 0) return status_;
  ::kill(pid_, sig);
  const auto until = std::chrono::steady_clock::now() + grace;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
      status_ = st;
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

Result<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return Internal("no free port");
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

bool PortAcceptsConnections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace shoal
