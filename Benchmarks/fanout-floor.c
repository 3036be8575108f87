/* The floor of a fan-out on this machine (issue 29, item 5): the least a server can do to deliver an
 * event to every subscriber, in C, so that Herald and nchan can be measured against what the kernel
 * alone costs. It speaks nchan's protocol as Benchmarks/nchan.conf sets it up, so `herald-bench
 * --nchan` drives it unchanged:
 *   GET /sub/ID    an EventSource stream, without chunks: the channel's oldest message first, then
 *                  every message published to it
 *   POST /pub/ID   a message, named by X-EventSource-Event; answered (201) after its fan-out
 *   anything else  204
 * One thread, one epoll set, one `send` per subscriber and event, nothing kept but the channel's
 * first message and its subscribers. No headers are checked, no limits, no ids beyond a counter:
 * whatever a real server adds, this leaves out. A send that does not take the whole event is counted
 * and reported at exit (then the run does not count: the floor never buffers).
 *   cc -O2 -o fanout-floor Benchmarks/fanout-floor.c && ./fanout-floor PORT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MAX_FDS = 65536, REQUEST_MAX = 8192, CHANNELS = 64 };

struct conn {
    char request[REQUEST_MAX];
    int used;
    int channel; /* a subscriber's channel + 1; 0 for a request connection */
};

struct channel {
    char name[64];
    char *first; /* the first message's frame, sent to every new subscriber */
    int first_length;
    int *subscribers;
    int count, capacity;
};

static struct conn *conns[MAX_FDS];
static struct channel channels[CHANNELS];
static int channel_count;
static unsigned long long message_id;
static unsigned long long short_sends;
static volatile sig_atomic_t stopping;

static void on_term(int signal_number) { (void)signal_number; stopping = 1; }

static struct channel *channel_named(const char *name, int length, int make) {
    for (int i = 0; i < channel_count; i++)
        if ((int)strlen(channels[i].name) == length && memcmp(channels[i].name, name, length) == 0) return &channels[i];
    if (!make || channel_count == CHANNELS || length >= 64) return NULL;
    struct channel *made = &channels[channel_count++];
    memcpy(made->name, name, length);
    made->name[length] = 0;
    return made;
}

static void send_all(int fd, const char *bytes, int length) {
    ssize_t sent = send(fd, bytes, length, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent != length) short_sends++;
}

static void close_conn(int epoll_fd, int fd) {
    struct conn *conn = conns[fd];
    if (conn && conn->channel) {
        struct channel *channel = &channels[conn->channel - 1];
        for (int i = 0; i < channel->count; i++)
            if (channel->subscribers[i] == fd) { channel->subscribers[i] = channel->subscribers[--channel->count]; break; }
    }
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL);
    close(fd);
    free(conn);
    conns[fd] = NULL;
}

/* The value of header `name` (lower case, with its colon) in the head, or NULL. */
static const char *header(const char *head, int head_length, const char *name, int *length) {
    int name_length = (int)strlen(name);
    for (const char *line = head; line && line < head + head_length;) {
        const char *end = memchr(line, '\n', head + head_length - line);
        if (!end) break;
        if (end - line > name_length && strncasecmp(line, name, name_length) == 0) {
            const char *value = line + name_length;
            while (*value == ' ') value++;
            *length = (int)(end - value);
            if (*length > 0 && value[*length - 1] == '\r') (*length)--;
            return value;
        }
        line = end + 1;
    }
    return NULL;
}

/* Handles whole requests at the start of the connection's buffer; -1 to close it. */
static int serve(int epoll_fd, int fd) {
    struct conn *conn = conns[fd];
    for (;;) {
        char *end = memmem(conn->request, conn->used, "\r\n\r\n", 4);
        if (!end) return conn->used == REQUEST_MAX ? -1 : 0;
        int head_length = (int)(end - conn->request) + 4;
        int body_length = 0, length;
        const char *value = header(conn->request, head_length, "content-length:", &length);
        if (value) body_length = atoi(value);
        if (head_length + body_length > REQUEST_MAX) return -1;
        if (conn->used < head_length + body_length) return 0;
        char *path = memchr(conn->request, ' ', head_length);
        if (!path) return -1;
        path++;
        char *path_end = memchr(path, ' ', head_length - (path - conn->request));
        if (!path_end) return -1;
        int path_length = (int)(path_end - path);
        if (strncmp(conn->request, "GET ", 4) == 0 && path_length > 5 && strncmp(path, "/sub/", 5) == 0) {
            struct channel *channel = channel_named(path + 5, path_length - 5, 1);
            if (!channel) return -1;
            static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
                                       "Connection: keep-alive\r\n\r\n: hi\n\n";
            char buffer[4096];
            int at = (int)sizeof(head) - 1;
            memcpy(buffer, head, at);
            if (channel->first && at + channel->first_length <= (int)sizeof(buffer)) {
                memcpy(buffer + at, channel->first, channel->first_length);
                at += channel->first_length;
            }
            send_all(fd, buffer, at);
            if (channel->count == channel->capacity) {
                channel->capacity = channel->capacity ? channel->capacity * 2 : 1024;
                channel->subscribers = realloc(channel->subscribers, sizeof(int) * channel->capacity);
            }
            channel->subscribers[channel->count++] = fd;
            conn->channel = (int)(channel - channels) + 1;
            conn->used = 0;
            return 0; /* a subscriber sends nothing more */
        }
        if (strncmp(conn->request, "POST ", 5) == 0 && path_length > 5 && strncmp(path, "/pub/", 5) == 0) {
            struct channel *channel = channel_named(path + 5, path_length - 5, 1);
            if (!channel) return -1;
            int name_length = 0;
            const char *name = header(conn->request, head_length, "x-eventsource-event:", &name_length);
            char frame[REQUEST_MAX + 256];
            int frame_length = snprintf(frame, sizeof(frame), "id: %llu\nevent: %.*s\ndata: %.*s\n\n", ++message_id,
                                        name ? name_length : 7, name ? name : "message", body_length, end + 4);
            if (!channel->first) {
                channel->first = malloc(frame_length);
                memcpy(channel->first, frame, frame_length);
                channel->first_length = frame_length;
            }
            for (int i = 0; i < channel->count; i++) send_all(channel->subscribers[i], frame, frame_length);
            static const char created[] = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
            send_all(fd, created, sizeof(created) - 1);
        } else {
            static const char empty[] = "HTTP/1.1 204 No Content\r\n\r\n";
            send_all(fd, empty, sizeof(empty) - 1);
        }
        int taken = head_length + body_length;
        memmove(conn->request, conn->request + taken, conn->used - taken);
        conn->used -= taken;
    }
    (void)epoll_fd;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s PORT\n", argv[0]); return 2; }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1])), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(listener, (struct sockaddr *)&address, sizeof(address)) != 0 || listen(listener, 4096) != 0) { perror("listen"); return 1; }
    int epoll_fd = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &event);
    struct epoll_event ready[512];
    while (!stopping) {
        int count = epoll_wait(epoll_fd, ready, 512, 200);
        for (int i = 0; i < count; i++) {
            int fd = ready[i].data.fd;
            if (fd == listener) {
                int accepted;
                while ((accepted = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (accepted >= MAX_FDS) { close(accepted); continue; }
                    setsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    conns[accepted] = calloc(1, sizeof(struct conn));
                    struct epoll_event watch = {.events = EPOLLIN, .data.fd = accepted};
                    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, accepted, &watch);
                }
                continue;
            }
            struct conn *conn = conns[fd];
            if (!conn) continue;
            ssize_t got = recv(fd, conn->request + conn->used, REQUEST_MAX - conn->used, 0);
            if (got <= 0) {
                if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                close_conn(epoll_fd, fd);
                continue;
            }
            conn->used += (int)got;
            if (conn->channel) { conn->used = 0; continue; }
            if (serve(epoll_fd, fd) < 0) close_conn(epoll_fd, fd);
        }
    }
    fprintf(stderr, "fanout-floor: %llu messages, %llu short sends\n", message_id, short_sends);
    return short_sends ? 1 : 0;
}
