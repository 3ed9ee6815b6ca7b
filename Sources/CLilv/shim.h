// lilv (liblilv-dev): the LV2 host library jalv, lv2apply, Ardour and Carla discover, describe
// and instantiate plugins with; the tests' own host (jackvu-lv2-host) uses it the same way.
#include <lilv/lilv.h>
