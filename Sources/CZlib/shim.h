#ifndef ENGAGE_CZLIB_SHIM_H
#define ENGAGE_CZLIB_SHIM_H
#include <zlib.h>
#endif
