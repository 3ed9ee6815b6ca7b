// Shim for liblo (OSC): messages, bundles, addresses, URLs, and servers (sockets that receive).
#ifndef JACKVU_CLIBLO_SHIM_H
#define JACKVU_CLIBLO_SHIM_H

#include <lo/lo.h>

#endif
