/* The engine's own limit: a libmicrohttpd hello-world with Herald's daemon flags (epoll, TURBO, ITC) and
 * handling (the response is queued on the second call, as Herald does), answering a small JSON body.
 *   cc -O2 -o .build/hello Benchmarks/hello.c $(pkg-config --cflags --libs libmicrohttpd)
 *   .build/hello 8081 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

static const char body[] = "{\"id\":\"1\",\"item\":\"hello\",\"status\":\"open\",\"price\":0}";
static int marker;

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    if (*con_cls == NULL) {
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *response = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(response, "Content-Type", "application/json");
    enum MHD_Result result = MHD_queue_response(connection, MHD_HTTP_OK, response);
    MHD_destroy_response(response);
    return result;
}

int main(int argc, char **argv)
{
    unsigned short port = argc > 1 ? (unsigned short)atoi(argv[1]) : 8081;
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO | MHD_USE_ITC, port, NULL, NULL, answer, NULL,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)19000, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096, MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "cannot start on port %u\n", port);
        return 1;
    }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigprocmask(SIG_BLOCK, &signals, NULL);
    int received;
    sigwait(&signals, &received);
    MHD_stop_daemon(daemon);
    return 0;
}
