#ifndef HERALD_CMICROHTTPD_SHIM_H
#define HERALD_CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* Swift cannot call MHD's variadic functions nor see some macros: these adapters make them callable. */

static const uint64_t CMHD_SIZE_UNKNOWN = MHD_SIZE_UNKNOWN;
static const ssize_t CMHD_CONTENT_READER_END_OF_STREAM = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t CMHD_CONTENT_READER_END_WITH_ERROR = MHD_CONTENT_READER_END_WITH_ERROR;

/// The settings `cmhd_start_daemon` passes to `MHD_start_daemon` as an option array.
typedef struct {
    unsigned int flags;
    const struct sockaddr *address;
    unsigned int connection_limit;
    size_t memory_limit;
    unsigned int connection_timeout;
    unsigned int listen_backlog;
    unsigned int thread_pool_size;
} cmhd_daemon_settings;

static inline struct MHD_Daemon *cmhd_start_daemon(
    cmhd_daemon_settings settings,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls)
{
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_SOCK_ADDR, 0, (void *)settings.address },
        { MHD_OPTION_CONNECTION_LIMIT, (intptr_t)settings.connection_limit, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)settings.memory_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)settings.connection_timeout, NULL },
        { MHD_OPTION_LISTEN_BACKLOG_SIZE, (intptr_t)settings.listen_backlog, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls },
        { settings.thread_pool_size > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END,
          (intptr_t)settings.thread_pool_size, NULL },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(settings.flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// The port the daemon listens on (useful after binding port 0), or 0.
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The connection's socket, or -1.
static inline int cmhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// Number of connections the daemon currently holds.
static inline unsigned int cmhd_current_connections(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

#endif
