// Minimal HTTP/1.1 over unix stream sockets: the daemon's API server and the
// client hostctl uses. Only what the API needs: Content-Length bodies in both
// directions, chunked transfer for streamed responses (the event stream), one
// request per connection (Connection: close). Each part has its own header:
// the messages (http_message.h), the server (http_server.h) and the client
// (http_client.h); this one gives all three.
#pragma once

#include "common/http_client.h"
#include "common/http_message.h"
#include "common/http_server.h"
