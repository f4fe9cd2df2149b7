//! The decoders on real exchange bytes: NASDAQ TotalView-ITCH 5.0 sample captures (pcap,
//! Ethernet with a VLAN tag, IPv4, UDP, MoldUDP64, ITCH), read through `wire::pcap`,
//! `wire::moldudp64` and `wire::itch::parse`, every message checked field by field against the
//! values written down below.
//!
//! The captures are not part of the project (their licence is unstated): the test looks for them
//! in `$T2T_REALDATA`, or else in `shared/realdata/` beside the workspace root, and skips, passing,
//! where they are absent. The expected values were read off the captures' bytes with the
//! layouts of the spec (NASDAQ TotalView-ITCH 5.0, section 1), not with this crate.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(feature = "pcapng")]
use pcap_file as _;
use {criterion as _, etherparse as _, proptest as _, thiserror as _, xdp_common as _};

use std::collections::BTreeSet;
use std::path::PathBuf;

use wire::itch::Side::{Buy, Sell};
use wire::itch::{
    AddOrderMpidRepr, AddOrderRepr, CrossTradeRepr, LuldAuctionCollarRepr,
    MarketParticipantPositionRepr, Message, NoiiRepr, OrderCancelRepr, OrderDeleteRepr,
    OrderExecutedRepr, OrderExecutedWithPriceRepr, OrderReplaceRepr, Price4, RegShoRepr, Side,
    Stock, StockTradingActionRepr, SystemEventRepr, Timestamp, TradeRepr,
};
use wire::moldudp64::{self, Session};
use wire::{itch, pcap};

/// The session of the older captures (the 2023 ones have theirs zeroed).
const SESSION: Session = Session(*b"000010059B");

/// One capture file: each packet's MoldUDP64 session, sequence number and messages, in order.
struct Capture {
    file: &'static str,
    packets: Vec<(Session, u64, Vec<Message>)>,
}

/// The 2023 captures: one message a packet, session and sequence number zeroed.
fn zeroed(messages: Vec<Message>) -> Vec<(Session, u64, Vec<Message>)> {
    messages
        .into_iter()
        .map(|m| (Session([0; 10]), 0, vec![m]))
        .collect()
}

/// The common header: stock locate, tracking number, nanoseconds since midnight.
#[derive(Clone, Copy)]
struct Header(u16, u16, u64);

fn h(stock_locate: u16, tracking_number: u16, nanos: u64) -> Header {
    Header(stock_locate, tracking_number, nanos)
}

fn ts(nanos: u64) -> Timestamp {
    Timestamp::from_nanos(nanos).unwrap()
}

// One constructor per message type found in the captures, taking the fields in the spec's order
// (the rows in `captures` are positional; each constructor names them once).

fn system_event(Header(stock_locate, tracking_number, t): Header, event_code: u8) -> Message {
    Message::SystemEvent(SystemEventRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        event_code,
    })
}

fn trading_action(
    Header(stock_locate, tracking_number, t): Header,
    stock: &[u8; 8],
    trading_state: u8,
    reserved: u8,
    reason: &[u8; 4],
) -> Message {
    Message::StockTradingAction(StockTradingActionRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        stock: Stock(*stock),
        trading_state,
        reserved,
        reason: *reason,
    })
}

fn reg_sho(
    Header(stock_locate, tracking_number, t): Header,
    stock: &[u8; 8],
    action: u8,
) -> Message {
    Message::RegSho(RegShoRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        stock: Stock(*stock),
        action,
    })
}

fn participant(
    Header(stock_locate, tracking_number, t): Header,
    mpid: &[u8; 4],
    stock: &[u8; 8],
    primary_market_maker: u8,
    market_maker_mode: u8,
    market_participant_state: u8,
) -> Message {
    Message::MarketParticipantPosition(MarketParticipantPositionRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        mpid: *mpid,
        stock: Stock(*stock),
        primary_market_maker,
        market_maker_mode,
        market_participant_state,
    })
}

fn collar(
    Header(stock_locate, tracking_number, t): Header,
    stock: &[u8; 8],
    reference_price: u32,
    upper_price: u32,
    lower_price: u32,
    extension: u32,
) -> Message {
    Message::LuldAuctionCollar(LuldAuctionCollarRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        stock: Stock(*stock),
        reference_price: Price4(reference_price),
        upper_price: Price4(upper_price),
        lower_price: Price4(lower_price),
        extension,
    })
}

fn add(
    Header(stock_locate, tracking_number, t): Header,
    order_ref: u64,
    side: Side,
    shares: u32,
    stock: &[u8; 8],
    price: u32,
) -> Message {
    Message::AddOrder(AddOrderRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        order_ref,
        side,
        shares,
        stock: Stock(*stock),
        price: Price4(price),
    })
}

fn add_mpid(
    Header(stock_locate, tracking_number, t): Header,
    order_ref: u64,
    side: Side,
    shares: u32,
    stock: &[u8; 8],
    price: u32,
    attribution: &[u8; 4],
) -> Message {
    Message::AddOrderMpid(AddOrderMpidRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        order_ref,
        side,
        shares,
        stock: Stock(*stock),
        price: Price4(price),
        attribution: *attribution,
    })
}

fn executed(
    Header(stock_locate, tracking_number, t): Header,
    order_ref: u64,
    executed_shares: u32,
    match_number: u64,
) -> Message {
    Message::OrderExecuted(OrderExecutedRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        order_ref,
        executed_shares,
        match_number,
    })
}

fn executed_at(
    Header(stock_locate, tracking_number, t): Header,
    order_ref: u64,
    executed_shares: u32,
    match_number: u64,
    printable: bool,
    price: u32,
) -> Message {
    Message::OrderExecutedWithPrice(OrderExecutedWithPriceRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        order_ref,
        executed_shares,
        match_number,
        printable,
        price: Price4(price),
    })
}

fn cancel(
    Header(stock_locate, tracking_number, t): Header,
    order_ref: u64,
    cancelled_shares: u32,
) -> Message {
    Message::OrderCancel(OrderCancelRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        order_ref,
        cancelled_shares,
    })
}

fn delete(Header(stock_locate, tracking_number, t): Header, order_ref: u64) -> Message {
    Message::OrderDelete(OrderDeleteRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        order_ref,
    })
}

fn replace(
    Header(stock_locate, tracking_number, t): Header,
    original_ref: u64,
    new_ref: u64,
    shares: u32,
    price: u32,
) -> Message {
    Message::OrderReplace(OrderReplaceRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        original_ref,
        new_ref,
        shares,
        price: Price4(price),
    })
}

fn trade(
    Header(stock_locate, tracking_number, t): Header,
    order_ref: u64,
    side: Side,
    shares: u32,
    stock: &[u8; 8],
    price: u32,
    match_number: u64,
) -> Message {
    Message::Trade(TradeRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        order_ref,
        side,
        shares,
        stock: Stock(*stock),
        price: Price4(price),
        match_number,
    })
}

fn cross(
    Header(stock_locate, tracking_number, t): Header,
    shares: u64,
    stock: &[u8; 8],
    cross_price: u32,
    match_number: u64,
    cross_type: u8,
) -> Message {
    Message::CrossTrade(CrossTradeRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        shares,
        stock: Stock(*stock),
        cross_price: Price4(cross_price),
        match_number,
        cross_type,
    })
}

#[expect(
    clippy::too_many_arguments,
    reason = "one argument a field, in the spec's order"
)]
fn noii(
    Header(stock_locate, tracking_number, t): Header,
    paired_shares: u64,
    imbalance_shares: u64,
    imbalance_direction: u8,
    stock: &[u8; 8],
    far_price: u32,
    near_price: u32,
    current_reference_price: u32,
    cross_type: u8,
    price_variation_indicator: u8,
) -> Message {
    Message::Noii(NoiiRepr {
        stock_locate,
        tracking_number,
        timestamp: ts(t),
        paired_shares,
        imbalance_shares,
        imbalance_direction,
        stock: Stock(*stock),
        far_price: Price4(far_price),
        near_price: Price4(near_price),
        current_reference_price: Price4(current_reference_price),
        cross_type,
        price_variation_indicator,
    })
}

/// Every capture and what it holds. Prices are `Price4` units (1/10,000 of a dollar).
#[rustfmt::skip]
fn captures() -> Vec<Capture> {
    vec![
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__AddOrderNoMPID.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                add(h(5528, 0, 34_199_999_894_278), 23_508_286, Buy, 1_600, b"IVOO    ", 873_900),
                add(h(8554, 0, 34_199_999_914_224), 21_361_419, Sell, 100, b"RETL    ", 71_700),
                add(h(11112, 0, 34_199_999_968_613), 34_103_800, Sell, 100, b"XLF     ", 339_500),
                add(h(11112, 0, 34_199_999_982_857), 34_103_812, Sell, 4_000, b"XLF     ", 339_500),
                add(h(9751, 0, 34_200_000_084_959), 34_103_828, Sell, 200, b"T       ", 141_300),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__AddOrderWithMPID.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                add_mpid(h(1738, 0, 34_199_999_977_782), 18_923_125, Sell, 100, b"CASY    ", 2_555_200, b"FLTU"),
                add_mpid(h(10177, 0, 34_200_000_089_678), 34_103_852, Sell, 100, b"TSVT    ", 66_100, b"FLTU"),
                add_mpid(h(3163, 0, 34_200_000_098_325), 23_508_474, Sell, 800, b"EIDO    ", 238_200, b"GSCO"),
                add_mpid(h(8362, 0, 34_200_000_151_606), 21_361_463, Sell, 100, b"QLYS    ", 1_605_800, b"FLTU"),
                add_mpid(h(10536, 0, 34_200_000_192_403), 34_103_964, Sell, 100, b"VCYT    ", 296_400, b"FLTU"),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__CrossTrade.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                cross(h(983, 1, 34_200_000_483_331), 0, b"BAC-Q   ", 0, 255_550, b'O'),
                cross(h(4234, 1, 34_200_000_652_059), 0, b"GCV     ", 0, 255_553, b'O'),
                cross(h(8231, 2, 34_200_000_781_447), 5_577, b"PTGX    ", 195_600, 255_561, b'O'),
                cross(h(1382, 1, 34_200_000_795_685), 0, b"BNED    ", 0, 255_562, b'O'),
                cross(h(5092, 2, 34_200_001_163_323), 5_379, b"IBTG    ", 224_800, 255_582, b'O'),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__LULDAuctionCollar.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                collar(h(11325, 0, 34_215_592_415_125), b"ZXZZT   ", 133_400, 140_100, 109_200, 0),
                collar(h(11320, 0, 34_216_302_268_913), b"ZVZZT   ", 270_200, 330_200, 256_700, 0),
                collar(h(6285, 0, 34_241_583_309_197), b"LTRY    ", 38_200, 40_100, 31_200, 0),
                collar(h(9146, 0, 34_305_956_275_196), b"SHLT    ", 78_800, 82_700, 64_400, 0),
                collar(h(11320, 0, 34_516_303_768_822), b"ZVZZT   ", 270_200, 330_200, 243_200, 1),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__MarketParticipantPosition.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                participant(h(3648, 0, 34_224_468_064_326), b"MAXM", b"FDLS    ", b'Y', b'N', b'A'),
                participant(h(3731, 0, 34_224_494_802_989), b"MAXM", b"FGMC    ", b'Y', b'N', b'A'),
                participant(h(3586, 0, 34_320_828_893_814), b"RILY", b"FBIO    ", b'Y', b'N', b'E'),
                participant(h(9768, 0, 34_437_787_611_659), b"NITE", b"TAN     ", b'Y', b'N', b'E'),
                participant(h(9768, 0, 34_443_930_332_539), b"VIRT", b"TAN     ", b'Y', b'N', b'E'),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__NetOrderImbalanceIndicator.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                noii(h(7853, 0, 34_200_000_087_025), 0, 0, b'O', b"PFTAW   ", 0, 0, 0, b'O', b' '),
                noii(h(4316, 0, 34_200_000_088_833), 0, 0, b'O', b"GFOR=   ", 0, 0, 0, b'O', b' '),
                noii(h(6659, 0, 34_200_000_092_117), 0, 0, b'O', b"MMM     ", 0, 0, 0, b'O', b' '),
                noii(h(6462, 0, 34_200_000_268_978), 1, 0, b'N', b"MDC     ", 464_400, 464_400, 464_400, b'O', b'L'),
                noii(h(9228, 0, 34_200_000_399_147), 1, 0, b'N', b"SKOR    ", 462_700, 462_700, 462_700, b'O', b'L'),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__NonCrossTrade.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                trade(h(4499, 2, 34_200_000_684_713), 0, Buy, 100, b"GOOGL   ", 1_284_600, 255_554),
                trade(h(6856, 2, 34_200_000_971_740), 0, Buy, 14, b"MU      ", 644_100, 255_569),
                trade(h(8327, 2, 34_200_000_991_243), 0, Buy, 27, b"QCOM    ", 1_115_300, 255_571),
                trade(h(749, 2, 34_200_000_997_052), 0, Buy, 2, b"ASML    ", 6_795_200, 255_573),
                trade(h(749, 4, 34_200_000_997_052), 0, Buy, 4, b"ASML    ", 6_795_200, 255_574),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__OrderCancel.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                cancel(h(9413, 0, 34_200_002_394_205), 33_823_232, 100),
                cancel(h(4499, 0, 34_200_002_464_667), 23_503_754, 100),
                cancel(h(10636, 0, 34_200_003_211_026), 34_083_228, 200),
                cancel(h(6485, 0, 34_200_006_901_693), 21_259_975, 2_000),
                cancel(h(973, 0, 34_200_007_174_153), 18_901_405, 200),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__OrderDelete.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                delete(h(3353, 0, 34_199_999_889_645), 23_442_714),
                delete(h(3353, 0, 34_199_999_889_850), 23_440_170),
                delete(h(3517, 0, 34_199_999_896_280), 23_497_686),
                delete(h(1109, 0, 34_199_999_912_765), 18_906_389),
                delete(h(7499, 0, 34_199_999_920_371), 21_358_375),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__OrderExecuted.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                executed(h(2345, 2, 34_199_999_934_561), 23_499_418, 25, 255_547),
                executed(h(9509, 2, 34_200_000_403_290), 34_057_696, 2_000, 255_548),
                executed(h(9509, 4, 34_200_000_403_290), 34_066_156, 200, 255_549),
                executed(h(608, 2, 34_200_000_496_208), 18_920_949, 1, 255_551),
                executed(h(11214, 2, 34_200_000_566_216), 26_890_664, 699, 255_552),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__OrderExecutedWithPrice.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                executed_at(h(5092, 1, 34_200_001_163_323), 19_993_566, 4_926, 255_581, false, 224_800),
                executed_at(h(11233, 1, 34_200_001_652_818), 10_138_168, 4, 255_626, false, 8_500),
                executed_at(h(9509, 2, 34_200_007_615_761), 34_105_576, 100, 256_056, true, 4_411_700),
                executed_at(h(9509, 4, 34_200_007_615_761), 34_106_808, 100, 256_057, true, 4_411_700),
                executed_at(h(6003, 2, 34_200_008_266_604), 21_364_519, 72, 256_074, true, 48_500),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__OrderReplace.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                replace(h(7603, 0, 34_199_999_836_649), 15_108_479, 21_361_351, 100, 1_062_600),
                replace(h(7603, 0, 34_199_999_839_204), 15_108_487, 21_361_355, 100, 1_062_600),
                replace(h(7603, 0, 34_199_999_839_753), 15_108_483, 21_361_359, 100, 1_062_600),
                replace(h(3709, 0, 34_199_999_842_535), 22_987_054, 23_508_278, 100, 1_614_000),
                replace(h(310, 0, 34_199_999_852_428), 18_188_209, 18_923_109, 100, 217_300),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__RegSHORestriction.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                reg_sho(h(9405, 0, 34_200_116_533_431), b"SOPA    ", b'1'),
                reg_sho(h(2282, 0, 34_200_150_870_585), b"CPHI    ", b'1'),
                reg_sho(h(2453, 0, 34_200_156_306_992), b"CUENW   ", b'1'),
                reg_sho(h(6806, 0, 34_200_156_507_124), b"MSGM    ", b'1'),
                reg_sho(h(11203, 0, 34_200_161_634_344), b"YCBD-A  ", b'1'),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__StockTradingAction.pcap",
            // 5 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                trading_action(h(11325, 0, 34_215_592_125_541), b"ZXZZT   ", b'P', b' ', b"LUDP"),
                trading_action(h(11320, 0, 34_216_302_093_801), b"ZVZZT   ", b'P', b' ', b"LUDP"),
                trading_action(h(1707, 0, 34_220_599_106_486), b"CAML    ", b'H', b' ', b"    "),
                trading_action(h(6285, 0, 34_241_583_109_014), b"LTRY    ", b'P', b' ', b"LUDP"),
                trading_action(h(2378, 0, 34_260_849_901_211), b"CSMD    ", b'H', b' ', b"    "),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__SystemEvent.pcap",
            // 1 packet(s), session and sequence number zeroed, one message each.
            packets: zeroed(vec![
                system_event(h(0, 0, 34_200_000_070_384), b'Q'),
            ]),
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0__AddOrderNoMpidAttributionMessage.pcap",
            packets: vec![
                (SESSION, 14_757_721, vec![
                    add(h(5528, 0, 34_199_999_894_278), 23_508_286, Buy, 1_600, b"IVOO    ", 873_900),
                ]),
            ],
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0__MarketParticipantPositionMessage.pcap",
            packets: vec![
                (SESSION, 17_861_990, vec![
                    participant(h(3731, 0, 34_224_494_802_989), b"MAXM", b"FGMC    ", b'Y', b'N', b'A'),
                ]),
            ],
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0__Multiple.Packets.pcap",
            packets: vec![
                (SESSION, 14_764_496, vec![
                    delete(h(2737, 0, 34_200_007_495_351), 23_485_802),
                ]),
                (SESSION, 19_009_117, vec![
                    add(h(6514, 0, 34_238_952_381_153), 7_942_047, Buy, 1, b"META    ", 805_200),
                    add(h(6514, 0, 34_238_952_381_153), 7_028_607, Sell, 100, b"META    ", 3_573_300),
                    add(h(6514, 0, 34_238_952_381_153), 70_575, Buy, 2, b"META    ", 805_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_005_963, Sell, 1, b"META    ", 3_573_700),
                    add(h(6514, 0, 34_238_952_381_153), 4_027_047, Buy, 28, b"META    ", 802_900),
                    add(h(6514, 0, 34_238_952_381_153), 5_897_695, Sell, 1, b"META    ", 3_574_200),
                    add(h(6514, 0, 34_238_952_381_153), 7_939_467, Buy, 1, b"META    ", 802_600),
                    add(h(6514, 0, 34_238_952_381_153), 7_159_039, Sell, 14, b"META    ", 3_575_000),
                    add_mpid(h(6514, 0, 34_238_952_381_153), 9_752_743, Buy, 5, b"META    ", 801_100, b"UBSS"),
                    add(h(6514, 0, 34_238_952_381_153), 7_158_931, Sell, 25, b"META    ", 3_575_500),
                    add(h(6514, 0, 34_238_952_381_153), 8_473_975, Buy, 2, b"META    ", 800_700),
                    add(h(6514, 0, 34_238_952_381_153), 7_147_571, Sell, 2, b"META    ", 3_577_200),
                    add(h(6514, 0, 34_238_952_381_153), 3_796_399, Buy, 1, b"META    ", 800_500),
                    add_mpid(h(6514, 0, 34_238_952_381_153), 10_250_271, Sell, 112, b"META    ", 3_578_900, b"UBSS"),
                    add(h(6514, 0, 34_238_952_381_153), 111_827, Buy, 8, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_847_171, Sell, 5, b"META    ", 3_579_900),
                    add(h(6514, 0, 34_238_952_381_153), 3_868_291, Buy, 10, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 8_323, Sell, 1, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 3_869_091, Buy, 2, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 128_123, Sell, 30, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 3_896_727, Buy, 350, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 143_603, Sell, 1, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 3_905_767, Buy, 30, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 3_942_295, Sell, 5, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 3_916_495, Buy, 38, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 3_997_991, Sell, 139, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 3_958_143, Buy, 1, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_041_119, Sell, 25, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_022_619, Buy, 62, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_152_427, Sell, 4, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_029_023, Buy, 5, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_355_847, Sell, 3, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_037_463, Buy, 10, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_830_355, Sell, 5, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_040_631, Buy, 1, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 5_325_315, Sell, 25, b"META    ", 3_580_000),
                    add(h(6514, 0, 34_238_952_381_153), 4_093_267, Buy, 5, b"META    ", 800_000),
                    add(h(6514, 0, 34_238_952_381_153), 5_325_319, Sell, 1, b"META    ", 3_580_000),
                ]),
            ],
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0__NetOrderImbalanceIndicatorMessage.pcap",
            packets: vec![
                (SESSION, 14_757_919, vec![
                    noii(h(6462, 0, 34_200_000_268_978), 1, 0, b'N', b"MDC     ", 464_400, 464_400, 464_400, b'O', b'L'),
                ]),
            ],
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0__OrderDeleteMessage.pcap",
            packets: vec![
                (SESSION, 14_757_722, vec![
                    delete(h(3517, 0, 34_199_999_896_280), 23_497_686),
                ]),
            ],
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0__OrderExecutedMessage.pcap",
            packets: vec![
                (SESSION, 14_757_745, vec![
                    executed(h(2345, 2, 34_199_999_934_561), 23_499_418, 25, 255_547),
                ]),
            ],
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0__OrderReplaceMessage.pcap",
            packets: vec![
                (SESSION, 14_757_701, vec![
                    replace(h(7603, 0, 34_199_999_836_649), 15_108_479, 21_361_351, 100, 1_062_600),
                ]),
            ],
        },
        Capture {
            file: "Nasdaq.Equities.TotalView.Itch.v5.0__StockTradingActionMessage.pcap",
            packets: vec![
                (SESSION, 34_147_961, vec![
                    trading_action(h(464, 0, 34_763_322_465_824), b"AMC     ", b'T', b' ', b"    "),
                ]),
            ],
        },
    ]
}

/// Where the captures are: `$T2T_REALDATA` if set (then it must exist), else
/// `shared/realdata/` beside the workspace root; `None` where that is absent.
fn realdata_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("T2T_REALDATA") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.is_dir(),
            "T2T_REALDATA={} is not a directory",
            dir.display()
        );
        return Some(dir);
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realdata");
    dir.is_dir().then_some(dir)
}

/// Every packet of a capture: session, sequence number and decoded messages.
fn decode(path: &std::path::Path) -> Vec<(Session, u64, Vec<Message>)> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = pcap::Reader::new(file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut packets = Vec::new();
    while let Some(record) = reader
        .read_record()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    {
        let at = format!("{} record at byte {}", path.display(), record.offset);
        let datagram = pcap::udp_payload(record.data)
            .unwrap_or_else(|e| panic!("{at}: {e:?}"))
            .unwrap_or_else(|| panic!("{at}: not a UDP datagram"));
        let packet = moldudp64::Packet::new_checked(datagram.payload)
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        moldudp64::Repr::parse(&packet).unwrap_or_else(|e| panic!("{at}: {e}"));
        let messages = packet
            .messages()
            .map(|block| {
                let block = block.unwrap_or_else(|e| panic!("{at}: {e}"));
                itch::parse(block).unwrap_or_else(|e| panic!("{at}: {e}"))
            })
            .collect::<Vec<_>>();
        assert_eq!(messages.len(), usize::from(packet.count()), "{at}");
        packets.push((packet.session(), packet.sequence(), messages));
    }
    packets
}

#[test]
fn every_capture_decodes_to_what_its_bytes_say() {
    let Some(dir) = realdata_dir() else {
        eprintln!(
            "skipped: no real captures (set T2T_REALDATA, or put them in shared/realdata/ beside \
             the workspace root)"
        );
        return;
    };
    let expected = captures();
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".pcap"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = expected.iter().map(|c| c.file.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk,
        listed,
        "the captures in {} and the ones this test knows",
        dir.display()
    );

    let mut kinds = BTreeSet::new();
    let mut messages = 0;
    for Capture { file, packets } in &expected {
        let decoded = decode(&dir.join(file));
        assert_eq!(decoded.len(), packets.len(), "{file}: packets");
        for (i, (got, want)) in decoded.iter().zip(packets).enumerate() {
            assert_eq!(got, want, "{file}: packet {i}");
        }
        for (_, _, m) in packets {
            kinds.extend(m.iter().map(|m| char::from(m.kind())));
            messages += m.len();
        }
    }
    // The types the captures hold, each checked above; the rest (R, V, W, K, h, B, N, O) have
    // no real sample here and rely on the unit fixtures.
    let covered: String = kinds.iter().collect();
    assert_eq!(covered, "ACDEFHIJLPQSUXY");
    assert_eq!(messages, 117);
    eprintln!(
        "{} captures, {messages} messages of types {covered}: every field as expected",
        expected.len()
    );
}
