#ifndef HERALD_CLINUX_H
#define HERALD_CLINUX_H

#ifndef __linux__
#error "Herald runs on Linux only: epoll, eventfd, malloc_trim and Glibc (see Package.swift)"
#endif

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <malloc.h>
#include <fcntl.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>

/* Linux calls Swift does not see through Glibc. epoll: each registration carries a
   64-bit token, and waiting returns tokens and event bits. */

static const uint32_t CEPOLL_IN = EPOLLIN;
static const uint32_t CEPOLL_OUT = EPOLLOUT;
static const uint32_t CEPOLL_RDHUP = EPOLLRDHUP;
static const uint32_t CEPOLL_HUP = EPOLLHUP;
static const uint32_t CEPOLL_ERR = EPOLLERR;
static const uint32_t CEPOLL_ONESHOT = EPOLLONESHOT;
static const uint32_t CEPOLL_ET = EPOLLET;

static inline int cepoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int cepoll_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

/// Signals an eventfd (its counter goes up by one; a reader waiting on it wakes).
static inline void cepoll_eventfd_signal(int fd) { (void)eventfd_write(fd, 1); }

/// Empties a non-blocking eventfd's counter (what signalled it has been seen).
static inline void cepoll_eventfd_drain(int fd)
{
    eventfd_t count;
    (void)eventfd_read(fd, &count);
}

/// Adds `fd` with `events`, reporting `token`.
static inline int cepoll_add(int epfd, int fd, uint32_t events, uint64_t token)
{
    struct epoll_event event = { .events = events, .data = { .u64 = token } };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

/// Changes the events `fd` is watched for.
static inline int cepoll_modify(int epfd, int fd, uint32_t events, uint64_t token)
{
    struct epoll_event event = { .events = events, .data = { .u64 = token } };
    return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event);
}

static inline int cepoll_remove(int epfd, int fd)
{
    struct epoll_event unused = { 0 };
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &unused);
}

/// Waits up to `timeout_ms` (-1: forever); stores up to `max` tokens and their event bits.
/// Returns their count, or -1 (see errno).
static inline int cepoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms)
{
    struct epoll_event ready[512];
    if (max > 512) max = 512;
    int count = epoll_wait(epfd, ready, max, timeout_ms);
    for (int i = 0; i < count; i++) {
        tokens[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return count;
}

/// Returns free heap memory to the system (glibc keeps it otherwise); true if some was returned.
static inline int clinux_malloc_trim(void) { return malloc_trim(0); }

/// A second descriptor for `fd`'s socket, close-on-exec, or -1. The socket stays open until both are closed.
static inline int clinux_dup(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }

/* A blocking TCP connection to an IPv4 address, with TCP_NODELAY, closed on exec: its descriptor, or -1
   with errno set. A `receive_buffer` above 0 is set before connecting, as TCP fixes its window then.
   For the benchmark's and the tests' clients. */
static inline int clinux_connect_ipv4_from(const char *host, uint16_t port, int receive_buffer, const char *source);

static inline int clinux_connect_ipv4(const char *host, uint16_t port, int receive_buffer) {
    return clinux_connect_ipv4_from(host, port, receive_buffer, NULL);
}

/// `clinux_connect_ipv4` from the local address `source` (NULL: any): on loopback, 127.0.0.2 is
/// another client as far as the server can tell.
static inline int clinux_connect_ipv4_from(const char *host, uint16_t port, int receive_buffer, const char *source) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (receive_buffer > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    if (source != NULL) {
        struct sockaddr_in local = {0};
        local.sin_family = AF_INET;
        if (inet_pton(AF_INET, source, &local.sin_addr) != 1 || bind(fd, (struct sockaddr *)&local, sizeof local) != 0) {
            int error = errno;
            close(fd);
            errno = error;
            return -1;
        }
    }
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int error = errno;
        close(fd);
        errno = error;
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/// Nagle off on a listening socket, which every socket it accepts inherits (Linux): 0, or -1.
static inline int clinux_no_delay(int fd)
{
    int on = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

/// Sends small writes at once: Nagle off, no cork left from an earlier response.
static inline void clinux_send_immediately(int fd)
{
    int on = 1, off = 0;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
}

/// Makes the calling thread a batch thread (SCHED_BATCH): waking up, it never preempts the thread
/// that has the core, and it yields to ordinary threads that wake.
static inline int clinux_batch_this_thread(void)
{
    struct sched_param param = { 0 };
    return sched_setscheduler((pid_t)syscall(SYS_gettid), 3 /* SCHED_BATCH */, &param);
}

/// Raises the calling thread's nice value by `by` (to at most 19), keeping its policy: a thread may
/// always lower its own priority. Returns 0, or -1 with errno.
static inline int clinux_lower_this_thread(int by)
{
    id_t thread = (id_t)syscall(SYS_gettid);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, thread);
    if (nice == -1 && errno != 0) return -1;
    return setpriority(PRIO_PROCESS, thread, nice + by > 19 ? 19 : nice + by);
}

/// Gives the core to another runnable thread, if one waits on it (`sched_yield`).
static inline void clinux_yield(void) { (void)sched_yield(); }

/// The cores the process may run on (its CPU affinity: `taskset`, a container's cpuset), at least 1.
/// (In CLinux.c, which defines _GNU_SOURCE for `sched_getaffinity`.)
int clinux_usable_cores(void);

/// An anonymous file in memory (close-on-exec), or -1: a packed replay's chunks, sent from it with
/// `clinux_sendfile`.
int clinux_memfd(const char *name);

/// Sends up to `count` bytes of `file` from `*offset` to `socket`, moving `*offset`; as sendfile(2).
static inline long clinux_sendfile(int socket, int file, long *offset, unsigned long count) {
    off_t at = (off_t)*offset;
    ssize_t sent = sendfile(socket, file, &at, (size_t)count);
    *offset = (long)at;
    return (long)sent;
}

/// Lowers the calling thread's scheduling priority (its nice value; Linux schedules threads one by one).
static inline int clinux_nice_this_thread(int nice)
{
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}

/// Makes the calling thread real-time (`SCHED_FIFO` at `priority`): it runs as soon as it is woken,
/// ahead of every ordinary thread on its core. Needs privilege. Returns 0, or -1 with errno.
static inline int clinux_realtime_this_thread(int priority)
{
    struct sched_param param = { .sched_priority = priority };
    return sched_setscheduler(0, SCHED_FIFO, &param);
}

/// Names the calling thread (the kernel keeps the first 15 bytes). Returns 0, or -1 with errno.
static inline int clinux_name_this_thread(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }

/// The calling thread's name (at most 15 bytes and a NUL, as `Thread.name` or `pthread_setname_np`
/// set it) into `name`, which holds 16 bytes. Returns 0, or -1 with errno.
static inline int clinux_thread_name(char name[16]) { return prctl(PR_GET_NAME, name, 0, 0, 0); }

#endif
