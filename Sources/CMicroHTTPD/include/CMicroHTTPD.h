#ifndef ENGAGE_CMICROHTTPD_H
#define ENGAGE_CMICROHTTPD_H
#include <microhttpd.h>
#endif
