// Admission control's counter, its tickets, and the responders that hold them.
#include "gateway/admission.h"

#include <gtest/gtest.h>

#include <vector>

namespace shoal::gateway {
namespace {

TEST(Admission, AdmitsUpToItsLimitAndTicketsGiveTheirPlaceBack) {
  Admission admission(2);
  auto a = admission.TryAdmit();
  auto b = admission.TryAdmit();
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(admission.TryAdmit());
  EXPECT_EQ(admission.in_flight(), 2u);
  a->Release();
  a->Release();  // once only
  EXPECT_EQ(admission.in_flight(), 1u);
  {
    auto c = admission.TryAdmit();
    ASSERT_TRUE(c);
    EXPECT_FALSE(admission.TryAdmit());
  }  // destroyed: released
  EXPECT_EQ(admission.in_flight(), 1u);
  b.reset();
  EXPECT_EQ(admission.in_flight(), 0u);
}

TEST(Admission, ZeroIsUnbounded) {
  Admission admission(0);
  std::vector<Admission::Ticket> tickets;
  for (int i = 0; i < 10000; ++i) tickets.push_back(std::move(*admission.TryAdmit()));
  EXPECT_EQ(admission.in_flight(), 10000u);
  tickets.clear();
  EXPECT_EQ(admission.in_flight(), 0u);
}

TEST(Admission, AnAdmittedResponderReleasesAfterTheLastPart) {
  Admission admission(1);
  std::vector<http::Response> sent;
  http::Responder respond = Admitted([&](http::Response r) { sent.push_back(std::move(r)); }, *admission.TryAdmit());
  http::Responder copy = respond;  // Responders are copied around; they share the ticket

  http::Response head;
  head.more = true;
  respond(head);  // a streamed response's head: still in flight
  EXPECT_EQ(admission.in_flight(), 1u);
  copy(head);
  EXPECT_EQ(admission.in_flight(), 1u);
  respond(http::Response{});  // the last part
  EXPECT_EQ(admission.in_flight(), 0u);
  EXPECT_EQ(sent.size(), 3u);
  EXPECT_TRUE(admission.TryAdmit());
}

TEST(Admission, AResponderDroppedUnansweredStillReleases) {
  Admission admission(1);
  {
    http::Responder respond = Admitted([](http::Response) {}, *admission.TryAdmit());
    EXPECT_EQ(admission.in_flight(), 1u);
  }
  EXPECT_EQ(admission.in_flight(), 0u);
}

}  // namespace
}  // namespace shoal::gateway
