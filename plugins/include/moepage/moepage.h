/* moepage plugin SDK, C ABI v1: include this one header. */
#ifndef MOEPAGE_MOEPAGE_H
#define MOEPAGE_MOEPAGE_H
#include "moepage/arch.h"
#include "moepage/host_api.h"
#include "moepage/options.h"
#include "moepage/pager.h"
#include "moepage/plugin.h"
#include "moepage/status.h"
#include "moepage/transport.h"
#endif
