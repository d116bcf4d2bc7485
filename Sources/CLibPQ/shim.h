#ifndef ENGAGE_CLIBPQ_SHIM_H
#define ENGAGE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
