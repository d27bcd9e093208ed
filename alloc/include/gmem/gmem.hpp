#pragma once
// The whole allocator layer.
#include "gmem/alloc_request.hpp"
#include "gmem/capability.hpp"
#include "gmem/capture.hpp"
#include "gmem/error.hpp"
#include "gmem/graph.hpp"
#include "gmem/graph_exec.hpp"
#include "gmem/handles.hpp"
#include "gmem/outside_free.hpp"
#include "gmem/user_object.hpp"
