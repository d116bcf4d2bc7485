#include "CMicroHTTPD.h"
