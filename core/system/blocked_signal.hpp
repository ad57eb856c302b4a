// kjit::system::BlockedSignal: blocks one signal in the calling thread for a scope, and takes an
// instance that the scope raised off the pending set before the mask is restored, so it never
// reaches the process's handler or default action. The signal's disposition is never touched:
// what the program set (or the default) is what it finds afterwards. Two uses: SIGPIPE around a
// remote call (a server that closed the socket), SIGXFSZ around a file write (RLIMIT_FSIZE: the
// write then fails with EFBIG, as any other failed write, instead of killing the process).
#pragma once

#include <cerrno>
#include <csignal>
#include <ctime>
#include <pthread.h>

namespace kjit::system {

class BlockedSignal {
public:
  explicit BlockedSignal(int signal) : m_signal(signal) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, m_signal);
    sigset_t pending;
    sigpending(&pending);
    m_was_pending = sigismember(&pending, m_signal) == 1;
    pthread_sigmask(SIG_BLOCK, &set, &m_old);
  }
  ~BlockedSignal() {
    if (!m_was_pending) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, m_signal) == 1) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, m_signal);
        const timespec zero{0, 0};
        while (sigtimedwait(&set, nullptr, &zero) == -1 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
  }
  BlockedSignal(const BlockedSignal&) = delete;
  BlockedSignal& operator=(const BlockedSignal&) = delete;

private:
  int m_signal;
  sigset_t m_old{};
  bool m_was_pending = false;
};

}  // namespace kjit::system
