// What a replay's bytes cost the sender's kernel, apart from any server (issue 29, item 2): 2,000
// loopback connections, a reader on core 1, the sender on core 0; the sender thread's CPU per
// connection for one way of sending (`git show dad6eb7:BENCHMARKS.md`, "Packed replays").
//   cc -O2 -o /tmp/replay-bytes Benchmarks/replay-bytes.c -lpthread
//   /tmp/replay-bytes small|pieces|copied|one|sendfile
// small: 700 bytes in one send (a new client's snapshot); pieces: 38,000 bytes in 8 KiB pieces, each
// copied into a fresh buffer, MSG_MORE on all but the last (Herald before packed replays); copied: the
// same in a 32 KiB piece and the rest, copied (packed replays); one: 38,000 bytes in one send;
// sendfile: the same from a memfd.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

enum { connections = 2000, replay = 38000, snapshot = 700 };
static int clients[connections], servers[connections];
static long expected;

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static void *reader(void *unused) {
    (void)unused;
    pin(1);
    int epoll = epoll_create1(0);
    for (int i = 0; i < connections; i++) {
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(epoll, EPOLL_CTL_ADD, clients[i], &event);
    }
    static char buffer[65536];
    struct epoll_event events[256];
    long received = 0;
    while (received < expected) {
        int count = epoll_wait(epoll, events, 256, 1000);
        for (int k = 0; k < count; k++) {
            ssize_t got;
            while ((got = recv(clients[events[k].data.u32], buffer, sizeof buffer, MSG_DONTWAIT)) > 0) received += got;
        }
    }
    return NULL;
}

static double threadCPU(void) {
    struct rusage usage;
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

// Sends `length` bytes of `data` in pieces of `piece`, each copied into a buffer of its own first.
static void sendCopied(int socket, const char *data, int length, int piece) {
    for (int offset = 0; offset < length; offset += piece) {
        int size = length - offset < piece ? length - offset : piece;
        char *buffer = malloc((size_t)size + 16);
        memcpy(buffer + 10, data + offset, (size_t)size);
        send(socket, buffer + 10, (size_t)size, MSG_NOSIGNAL | (offset + size < length ? MSG_MORE : 0));
        free(buffer);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "small") && strcmp(mode, "pieces") && strcmp(mode, "copied") && strcmp(mode, "one") && strcmp(mode, "sendfile")) {
        fprintf(stderr, "usage: %s small|pieces|copied|one|sendfile\n", argv[0]);
        return 2;
    }
    pin(0);
    int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(19555), .sin_addr.s_addr = htonl(0x7f000001)};
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 4096)) {
        perror("listen on 127.0.0.1:19555");
        return 1;
    }
    for (int i = 0; i < connections; i++) {
        clients[i] = socket(AF_INET, SOCK_STREAM, 0);
        connect(clients[i], (struct sockaddr *)&address, sizeof address);
        servers[i] = accept(listener, NULL, NULL);
        setsockopt(servers[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    char *data = malloc(replay);
    memset(data, 'x', replay);
    int file = memfd_create("replay", 0);
    if (write(file, data, replay) != replay) return 1;
    int small = !strcmp(mode, "small");
    expected = (long)connections * (small ? snapshot : replay);
    pthread_t thread;
    pthread_create(&thread, NULL, reader, NULL);
    usleep(100000);
    double start = threadCPU();
    for (int i = 0; i < connections; i++) {
        if (small) send(servers[i], data, snapshot, MSG_NOSIGNAL);
        else if (!strcmp(mode, "pieces")) sendCopied(servers[i], data, replay, 8192);
        else if (!strcmp(mode, "copied")) sendCopied(servers[i], data, replay, 32768);
        else if (!strcmp(mode, "one")) send(servers[i], data, replay, MSG_NOSIGNAL);
        else {
            off_t offset = 0;
            sendfile(servers[i], file, &offset, replay);
        }
    }
    double spent = threadCPU() - start;
    pthread_join(thread, NULL);
    printf("%s: %.1f us of the sender's CPU per connection\n", mode, spent / connections * 1e6);
    return 0;
}
