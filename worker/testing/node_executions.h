#ifndef GOPT_WORKER_TESTING_NODE_EXECUTIONS_H_
#define GOPT_WORKER_TESTING_NODE_EXECUTIONS_H_

#include <cstdint>
#include <string>

namespace gopt::worker::testing {

// DescribeResponse.node_executions of the gopt.v1.Worker at `address`
// (host:port): how many nodes it has started so far. A failed call fails
// the test (gtest EXPECT) and returns 0.
int64_t NodeExecutions(const std::string& address);

}  // namespace gopt::worker::testing

#endif  // GOPT_WORKER_TESTING_NODE_EXECUTIONS_H_
